/**
 * A replay's approvals (`fabric replay --execute`): each call a person answered in the run gets
 * the same answer again, read from the run's `approval_decided` lines, so the re-run executes
 * what the run executed; a call with no recorded answer is refused as nobody's to give. Held in
 * memory: a replay never asks anyone, parks, or writes an approval.
 */
import type { ApprovalAnswer, ApprovalRecord, Grant } from '../../domain/approvals.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { ApprovalFilter, ApprovalStore, UnreadableFile } from '../approvals/approval-store.ts';

export class RecordedApprovals implements ApprovalStore {
  readonly location = 'the run being replayed';
  readonly #records = new Map<string, ApprovalRecord>();
  /** The run's answers by call id. */
  readonly #answers = new Map<string, ApprovalAnswer>();

  constructor(events: readonly RunEvent[]) {
    for (const event of events) {
      if (event.kind !== 'approval_decided') continue;
      this.#answers.set(event.call_id, {
        state: event.state,
        scope: 'once',
        pattern: 0,
        // The run's channel, so the model reads what it read; `by` says it is a replay's answer.
        channel: event.channel,
        by: 'the run being replayed',
        ...(event.message === undefined ? {} : { message: event.message }),
        at: event.answered_at ?? event.ts,
      });
    }
  }

  async create(record: ApprovalRecord): Promise<void> {
    this.#records.set(record.id, record);
  }

  async get(id: string): Promise<ApprovalRecord | undefined> {
    return this.#records.get(id);
  }

  async forCall(runId: string, callId: string): Promise<ApprovalRecord | undefined> {
    const answer = this.#answers.get(callId);
    if (answer === undefined) return undefined;
    return {
      id: `apr_replay_${callId}`,
      run_id: runId,
      specialist: '',
      step: 0,
      call_id: callId,
      tool: '',
      arguments: '',
      rule: 'the run being replayed',
      requested_at: answer.at,
      proposals: [],
      state: answer.state,
      answer,
    };
  }

  async list(filter: ApprovalFilter = {}): Promise<ApprovalRecord[]> {
    return [...this.#records.values()].filter(
      (record) =>
        (filter.state === undefined || record.state === filter.state) &&
        (filter.runId === undefined || record.run_id === filter.runId),
    );
  }

  async answer(id: string, answer: ApprovalAnswer): Promise<ApprovalRecord> {
    const record = this.#records.get(id);
    if (record === undefined)
      throw new FabricError('approval_not_found', `No approval "${id}" in this replay.`);
    const answered = { ...record, state: answer.state, answer };
    this.#records.set(id, answered);
    return answered;
  }

  async grants(): Promise<Grant[]> {
    return [];
  }

  async revoke(id: string): Promise<Grant> {
    throw new FabricError('approval_not_found', `No grant "${id}" in this replay.`);
  }

  async unreadable(): Promise<UnreadableFile[]> {
    return [];
  }
}

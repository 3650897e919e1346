/**
 * The loop's side of approvals (SPEC §19, ADR 0017): a call a rule says `ask` about is run when
 * a grant covers it or a person approves it, and otherwise waits (`wait`), parks the run
 * (`park`), is refused (`deny`) or ends the run (`fail`). Each step is a runlog line:
 * `approval_requested` with what the person is shown, `approval_decided` with who answered,
 * through which channel, and at what scope. An expiry is never recorded as a person's "no".
 */
import {
  type ApprovalAnswer,
  type ApprovalRecord,
  type ApprovalSubject,
  type OnApproval,
  describeCall,
  grantHolds,
  notRunText,
  patternCovers,
  proposePatterns,
} from '../../domain/approvals.ts';
import { FabricError } from '../../domain/errors.ts';
import type { ToolCall } from '../../domain/messages.ts';
import type { AnswerInput, ApprovalStore } from '../approvals/approval-store.ts';
import { answerApproval } from '../approvals/answer-approval.ts';
import type { PolicyCheck } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';

/** A terminal's prompt (`wait`): the person's answer, or undefined when nobody can be asked there. */
export type ApprovalPrompt = (
  record: ApprovalRecord,
  signal: AbortSignal,
) => Promise<AnswerInput | undefined>;

/** How a run's calls are approved: where approvals are kept, what waits, and for how long. */
export interface ApprovalSettings {
  readonly store: ApprovalStore;
  readonly mode: OnApproval;
  /** Seconds an unanswered approval lasts; undefined: for ever. */
  readonly timeoutS?: number | undefined;
  readonly specialist: string;
  readonly prompt?: ApprovalPrompt | undefined;
  /** How often a waiting run reads the store for an answer from another channel (ms). */
  readonly pollMs?: number | undefined;
  readonly now?: () => Date;
}

/** What the dispatcher does with the call. */
export type ApprovalOutcome =
  | {
      readonly kind: 'run';
      readonly argv?: readonly string[] | undefined;
      readonly note?: string | undefined;
    }
  | { readonly kind: 'refuse'; readonly text: string };

/** Thrown to park the run (`awaiting_approval`): it holds no model request and no worker meanwhile. */
export class RunParked extends Error {
  readonly approval: ApprovalRecord;
  constructor(approval: ApprovalRecord) {
    super(`The run waits for approval ${approval.id}: ${describeCall(approval)}.`);
    this.name = 'RunParked';
    this.approval = approval;
  }
}

const POLL_MS = 250;

export class CallApprovals {
  readonly #settings: ApprovalSettings;
  readonly #recorder: RunRecorder;
  readonly #runId: string;

  constructor(settings: ApprovalSettings, recorder: RunRecorder, runId: string) {
    this.#settings = settings;
    this.#recorder = recorder;
    this.#runId = runId;
  }

  /** Decides a call the policy says `ask` about; records each step of it. */
  async decide(
    call: ToolCall,
    check: PolicyCheck,
    step: number,
    signal: AbortSignal,
  ): Promise<ApprovalOutcome> {
    const { store, specialist } = this.#settings;
    const subject: ApprovalSubject = { ...check.request, arguments: call.arguments };
    const now = this.#now();
    // A run resumed after its approval was answered finds the approval of this very call.
    const earlier = await store.forCall(this.#runId, call.id);
    if (earlier !== undefined && earlier.state !== 'pending') return this.#apply(earlier, step, subject);
    if (earlier === undefined) {
      const grant = (await store.grants({ specialist })).find(
        (candidate) =>
          grantHolds(candidate, this.#runId, specialist, now) && patternCovers(candidate.pattern, subject),
      );
      if (grant !== undefined) {
        await this.#recorder.record({
          kind: 'approval_decided',
          step,
          call_id: call.id,
          approval_id: grant.approval_id,
          state: 'approved',
          scope: grant.scope,
          pattern: grant.pattern.label,
          channel: 'grant',
          grant_id: grant.id,
        });
        return { kind: 'run', argv: subject.argv };
      }
    }
    const record = earlier ?? (await this.#request(call, check, subject, step));
    switch (this.#settings.mode) {
      case 'park':
        throw new RunParked(record);
      case 'deny':
      case 'fail': {
        const answer: ApprovalAnswer = {
          state: 'denied',
          scope: 'once',
          pattern: 0,
          channel: 'on_approval',
          by: `on_approval: ${this.#settings.mode} (nobody can be asked in this run)`,
          at: this.#now().toISOString(),
        };
        const decided = await this.#answerOrRead(record, answer);
        if (this.#settings.mode === 'fail' && decided.answer?.channel === 'on_approval') {
          await this.#recordDecided(decided, step);
          throw new FabricError(
            'approval_required',
            `${capital(describeCall(record))} needs a person's approval (${record.rule}) and this run's on_approval is "fail". ` +
              'Run it where a person can answer (a terminal, or on_approval: park with fabric serve), or allow the command with a policy rule.',
            { details: { approval: record.id } },
          );
        }
        if (decided.answer?.channel === 'on_approval') {
          await this.#recordDecided(decided, step);
          return {
            kind: 'refuse',
            text: `Not run: ${describeCall(record)} needs a person's approval (${record.rule}), and nobody can be asked in this run. Do without it, or say in finish_task that it is needed.`,
          };
        }
        return this.#apply(decided, step, subject);
      }
      case 'wait':
        return this.#apply(await this.#wait(record, signal), step, subject);
    }
  }

  /** Keeps the approval and records what the person will be shown. */
  async #request(
    call: ToolCall,
    check: PolicyCheck,
    subject: ApprovalSubject,
    step: number,
  ): Promise<ApprovalRecord> {
    const now = this.#now();
    const timeout = this.#settings.timeoutS;
    const record: ApprovalRecord = {
      id: `apr_${crypto.randomUUID().replace(/-/g, '').slice(0, 12)}`,
      run_id: this.#runId,
      specialist: this.#settings.specialist,
      step,
      call_id: call.id,
      tool: call.name,
      ...(subject.argv === undefined ? {} : { argv: subject.argv }),
      ...(subject.path === undefined ? {} : { path: subject.path }),
      arguments: call.arguments,
      rule: check.by,
      requested_at: now.toISOString(),
      ...(timeout === undefined
        ? {}
        : { expires_at: new Date(now.getTime() + timeout * 1000).toISOString() }),
      proposals: proposePatterns(subject),
      state: 'pending',
    };
    await this.#settings.store.create(record);
    await this.#recorder.record({
      kind: 'approval_requested',
      step,
      call_id: call.id,
      approval_id: record.id,
      tool: call.name,
      ...(record.argv === undefined ? {} : { argv: [...record.argv] }),
      ...(record.path === undefined ? {} : { path: record.path }),
      rule: record.rule,
      on_approval: this.#settings.mode,
      proposals: record.proposals.map((pattern) => ({
        label: pattern.label,
        matches: pattern.matches,
        does_not_match: pattern.does_not_match,
      })),
      ...(record.expires_at === undefined ? {} : { expires_at: record.expires_at }),
    });
    return record;
  }

  /** Waits for an answer from the terminal or any other channel, until it expires or the run is cancelled. */
  async #wait(record: ApprovalRecord, signal: AbortSignal): Promise<ApprovalRecord> {
    const { store, prompt } = this.#settings;
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    let prompted: ApprovalRecord | undefined;
    let promptError: unknown;
    const asking =
      prompt === undefined
        ? undefined
        : prompt(record, both).then(
            async (input) => {
              if (input === undefined || both.aborted) return;
              prompted = await answerApproval(store, record.id, input, this.#now()).catch(async (error) => {
                // Another channel answered first: its answer stands.
                if (error instanceof FabricError && error.code === 'approval_answered')
                  return store.get(record.id);
                promptError = error;
                return undefined;
              });
            },
            () => {},
          );
    try {
      for (;;) {
        if (promptError !== undefined) throw promptError;
        if (prompted !== undefined) return prompted;
        const now = await store.get(record.id);
        if (now !== undefined && now.state !== 'pending') {
          // Expired: written once, so every channel sees it; never a person's "no".
          if (now.state === 'expired' && now.answer !== undefined) return this.#answerOrRead(now, now.answer);
          return now;
        }
        if (signal.aborted) {
          await this.#answerOrRead(record, {
            state: 'cancelled',
            scope: 'once',
            pattern: 0,
            channel: 'run',
            by: 'the run was cancelled while it waited',
            at: this.#now().toISOString(),
          });
          throw signal.reason;
        }
        await pause(this.#settings.pollMs ?? POLL_MS, signal);
      }
    } finally {
      stop.abort();
      await asking;
    }
  }

  /** Writes the answer unless another channel wrote one first; returns the one that stands. */
  async #answerOrRead(record: ApprovalRecord, answer: ApprovalAnswer): Promise<ApprovalRecord> {
    try {
      return await this.#settings.store.answer(record.id, answer);
    } catch (error) {
      if (!(error instanceof FabricError) || error.code !== 'approval_answered') throw error;
      return (await this.#settings.store.get(record.id)) ?? record;
    }
  }

  /** Records the answer and says what the dispatcher does with it. */
  async #apply(record: ApprovalRecord, step: number, subject: ApprovalSubject): Promise<ApprovalOutcome> {
    const answer = record.answer;
    if (answer === undefined) throw new Error(`approval ${record.id} has no answer`);
    await this.#recordDecided(record, step);
    if (answer.state !== 'approved') return { kind: 'refuse', text: notRunText(record, answer) };
    const message = answer.message?.trim();
    return {
      kind: 'run',
      // The approval is bound to this call (run and call id): its own argv is what runs.
      argv: subject.argv,
      ...(message === undefined || message === ''
        ? {}
        : { note: `[Approved by a person through ${answer.channel}; their message: ${message}]` }),
    };
  }

  async #recordDecided(record: ApprovalRecord, step: number): Promise<void> {
    const answer = record.answer;
    if (answer === undefined) return;
    const pattern = answer.scope === 'once' ? undefined : record.proposals[answer.pattern];
    await this.#recorder.record({
      kind: 'approval_decided',
      step,
      call_id: record.call_id,
      approval_id: record.id,
      state: answer.state,
      scope: answer.scope,
      ...(pattern === undefined ? {} : { pattern: pattern.label }),
      channel: answer.channel,
      ...(answer.by === undefined ? {} : { by: answer.by }),
      ...(answer.message === undefined ? {} : { message: answer.message }),
      answered_at: answer.at,
      ...(answer.grant_expires_at === undefined ? {} : { grant_expires_at: answer.grant_expires_at }),
    });
  }

  #now(): Date {
    return this.#settings.now?.() ?? new Date();
  }
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((done) => {
    const finish = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      done();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener('abort', finish, { once: true });
  });
}

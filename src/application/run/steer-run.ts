/**
 * Steering a run from anywhere that sees its runs directory (SPEC §19, ADR 0019): the request is
 * checked against the run's record (alive, the step it is at) and written to the run's inbox,
 * which the owning process — `fabric serve` on any port, a worker, a plain `fabric run` — reads
 * between steps. Nothing here does I/O.
 */
import { FabricError } from '../../domain/errors.ts';
import type { ApprovalStore } from '../approvals/approval-store.ts';
import type { RunRecord } from '../runs/run-record.ts';
import { isResumableFailure } from './resume-run.ts';
import type { InboxEntry, RunInboxes } from './steering.ts';

/**
 * The longest steer message, in characters once trimmed: the same for `fabric steer`, HTTP and
 * the viewer. It goes into every later request of the run, so a pasted file would crowd out the
 * conversation it is meant to steer.
 */
export const MAX_STEER_TEXT = 100_000;

/** What a person asks of a running run. */
export type SteerRequest =
  | {
      readonly kind: 'message';
      readonly text: string;
      readonly mode: 'steer' | 'interrupt';
      readonly expectedStep?: number;
      readonly channel: string;
    }
  | { readonly kind: 'pause' | 'unpause'; readonly channel: string };

export interface SteerRunDeps {
  /** The run's record: throws `run_not_found` when there is none. */
  readonly show: (runId: string) => Promise<RunRecord>;
  readonly inboxes: Pick<RunInboxes, 'post'>;
  /** The approvals a parked run waits for, named in the refusal so they can be answered. */
  readonly approvals: Pick<ApprovalStore, 'list'>;
  readonly newId: () => string;
}

/** Accepted: the entry's id, and the step it lands after (the step running now). */
export interface SteerAccepted {
  readonly run_id: string;
  readonly id: string;
  readonly after_step: number;
}

/** Checks the run can hear it and writes it to the run's inbox. */
export async function steerRun(
  deps: SteerRunDeps,
  runId: string,
  request: SteerRequest,
): Promise<SteerAccepted> {
  const record = await deps.show(runId);
  const id = record.run_id;
  if (record.status === 'interrupted')
    throw new FabricError(
      'run_not_live',
      `Run ${id} is not running any more: its process stopped without ending it, so nothing reads its messages. Resume it with \`fabric resume ${id}\` (or POST /v1/runs/${id}/resume), then steer it.`,
    );
  if (record.status !== 'running') {
    // Naming the approvals only helps: a store that cannot be read leaves the refusal as it is.
    const waiting =
      record.status === 'awaiting_approval'
        ? await deps.approvals.list({ runId: id, state: 'pending' }).then(
            (approvals) => approvals.map((approval) => approval.id),
            () => [],
          )
        : [];
    throw new FabricError('run_finished', notRunning(record, waiting));
  }
  if (record.runlog === null)
    throw new FabricError(
      'run_not_live',
      `Run ${id} runs on another host (its runlog is not in this runs directory), so its inbox cannot be reached from here. Steer it from a process that shares its runs directory.`,
    );
  if (
    request.kind === 'message' &&
    request.expectedStep !== undefined &&
    request.expectedStep !== record.steps
  )
    throw new FabricError(
      'steer_stale_step',
      `Run ${id} is at step ${record.steps}, not ${request.expectedStep}: ${
        request.expectedStep > record.steps
          ? `step ${request.expectedStep} has not been reached yet`
          : 'the message was written for a state the run has left'
      }. Look at the run again and resend with expected_step ${record.steps}, or without it.`,
      { details: { step: record.steps } },
    );
  const entryId = deps.newId();
  const entry: InboxEntry =
    request.kind === 'message'
      ? { id: entryId, kind: 'message', text: request.text, mode: request.mode, channel: request.channel }
      : { id: entryId, kind: request.kind, channel: request.channel };
  await deps.inboxes.post(id, entry);
  return { run_id: id, id: entryId, after_step: record.steps };
}

/**
 * Why a run that is not running hears no message, and what can be done instead: only what
 * `fabric resume` allows for how it ended (a succeeded run never goes on).
 */
function notRunning(record: RunRecord, waiting: readonly string[]): string {
  const id = record.run_id;
  if (record.status === 'awaiting_approval') {
    const [first = 'ID'] = waiting;
    const which =
      waiting.length === 0
        ? `\`fabric approvals list --run ${id}\` shows its ID`
        : `it waits for ${waiting.join(', ')}`;
    return `Run ${id} is parked on an approval (awaiting_approval); a message can only reach a running run. Answer the approval first (${which}): \`fabric approvals answer ${first} approve|deny\`, or POST /v1/approvals/${first}. A \`fabric serve\` on its runs directory then goes on with it; steer it once it runs.`;
  }
  return `Run ${id} has ended (${record.status}); a message can only reach a running run. ${whatNow(record)}`;
}

/** What can be done with a run that ended, by how it ended. */
function whatNow(record: RunRecord): string {
  const id = record.run_id;
  switch (record.status) {
    case 'succeeded':
      return 'It did its task and cannot go on: start a new run for more work.';
    case 'max_steps':
      return `It used its steps: \`fabric resume ${id} --max-steps N\` (or POST /v1/runs/${id}/resume with {"max_steps": N}) gives it N more, then steer it.`;
    case 'failed':
      return isResumableFailure(record.error?.code)
        ? `No backend answered it: \`fabric resume ${id}\` (or POST /v1/runs/${id}/resume) goes on with it once one does, then steer it.`
        : 'It failed and cannot go on: start a new run.';
    default:
      return `Start a new run, or \`fabric resume ${id}\` (or POST /v1/runs/${id}/resume) to go on with it, then steer it.`;
  }
}

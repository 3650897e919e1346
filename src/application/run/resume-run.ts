/**
 * The resume use case (SPEC §18): `fabric resume`, `POST /v1/runs/:id/resume` and MCP's
 * `resume_run` go on with a run its process left, under the same run id. It reads the run's
 * history, refuses what cannot be resumed (with the reason and the fix), and hands the run to the
 * run use case with the history to go on from.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunResult, RunStatus } from '../../domain/run-result.ts';
import { runProfileFor } from '../models/run-profile.ts';
import type { ModelProfile } from '../../config/schema.ts';
import type { RunLogStore, RunObserver } from '../ports.ts';
import { type RunHistory, runHistory } from '../replay/run-history.ts';
import type { ProcessLiveness } from '../runs/liveness-ports.ts';
import type { RunRequest } from './run-request.ts';
import { type OnApproval, describeCall } from '../../domain/approvals.ts';
import type { ApprovalStore } from '../approvals/approval-store.ts';
import type { ApprovalPrompt } from './call-approvals.ts';

/** What resuming a run takes. */
export interface ResumeRequest {
  /** A run id, a unique prefix of one, or a runlog's path. */
  readonly run: string;
  /** Steps the resumed run may take beyond those it took; default: what its limit left. */
  readonly moreSteps?: number | undefined;
  /** Go on although the config or the pack changed since the run started. */
  readonly force?: boolean;
  readonly observers?: readonly RunObserver[];
  readonly signal: AbortSignal;
  readonly onNotice?: (message: string) => void;
  /** As `RunRequest.fence`: a queue worker's hold on the run. */
  readonly fence?: () => Error | undefined;
  /** As `RunRequest.onApproval` / `defaultOnApproval`: what a call needing approval does now. */
  readonly onApproval?: OnApproval | undefined;
  readonly defaultOnApproval?: OnApproval | undefined;
  readonly approvalPrompt?: ApprovalPrompt | undefined;
  readonly noWaiting?: boolean | undefined;
  /** Who resumes (`RunRequest.resumer`): a run whose `run_start` names a resumer goes on only through it. */
  readonly resumer?: string | undefined;
}

export interface ResumeDeps {
  readonly runLogStore: RunLogStore;
  readonly liveness: ProcessLiveness;
  /** Starts the run (the run use case), here with the history to go on from. */
  readonly run: (request: RunRequest) => Promise<RunResult>;
  readonly configDigest: string;
  readonly profiles?: Readonly<Record<string, ModelProfile>>;
  /** Where a parked run's approvals are (SPEC §19): it goes on only once they are answered. */
  readonly approvals?: ApprovalStore;
}

/** A run that failed for one of these may be resumed: no backend answered, nothing was wrong with it. */
const RESUMABLE_FAILURES = new Set(['backend_unavailable']);

/** True for a failed run's error code that `fabric resume` goes on after (no backend answered). */
export function isResumableFailure(code: string | undefined): boolean {
  return code !== undefined && RESUMABLE_FAILURES.has(code);
}

/** Checks that a run can go on, and runs it on from where it stopped. */
export async function resumeRun(deps: ResumeDeps, request: ResumeRequest): Promise<RunResult> {
  const contents = await deps.runLogStore.read(request.run);
  const start = contents.events.find((event) => event.kind === 'run_start');
  if (start?.kind !== 'run_start')
    throw new FabricError(
      'runlog_corrupt',
      `${contents.location} has no run_start line, so it cannot be resumed.`,
    );
  const history = runHistory(
    contents.events,
    runProfileFor({ id: start.model }, deps.profiles).passReasoningBack,
  );
  const runId = contents.runId;
  const previousStatus = statusToResume(history, runId, deps.liveness, request.force === true);
  if (start.resumer !== undefined && start.resumer !== request.resumer && request.force !== true)
    throw refuse(runId, 'resumer', resumerReason(start.resumer, start.workspace));
  if (previousStatus === 'awaiting_approval' && deps.approvals !== undefined) {
    const waiting = await deps.approvals.list({ runId, state: 'pending' });
    if (waiting.length > 0 && request.force !== true)
      throw refuse(
        runId,
        'approval_pending',
        `it waits for approval ${waiting[0]!.id} (${describeCall(waiting[0]!)}). Answer it first: fabric approvals answer ${waiting[0]!.id} approve (or deny); the run then goes on.`,
      );
  }
  if (previousStatus === 'max_steps' && request.moreSteps === undefined)
    throw refuse(
      runId,
      'max_steps',
      `it used its ${history.steps} steps. Give it more with --max-steps N (N more steps).`,
    );
  if (start.config_digest !== deps.configDigest && request.force !== true)
    throw refuse(
      runId,
      'config_changed',
      'the config changed since it started (its digest differs), so the run would not go on as it began. Resume it with --force to go on under the new config, or start a new run.',
    );
  const maxSteps =
    request.moreSteps === undefined
      ? Math.max(start.max_steps, history.steps + 1)
      : history.steps + request.moreSteps;
  try {
    return await deps.run({
      specialist: start.specialist,
      task: start.task,
      ...(start.workspace === null ? {} : { workspace: start.workspace }),
      maxSteps,
      ...(request.observers === undefined ? {} : { observers: request.observers }),
      signal: request.signal,
      runId,
      ...(request.onNotice === undefined ? {} : { onNotice: request.onNotice }),
      ...(start.tags === undefined ? {} : { tags: start.tags }),
      ...(start.resumer === undefined ? {} : { resumer: start.resumer }),
      resume: {
        history,
        previousStatus,
        forced: request.force === true,
        previous: lastServer(contents.events, start),
      },
      ...(request.fence === undefined ? {} : { fence: request.fence }),
      ...(request.onApproval === undefined ? {} : { onApproval: request.onApproval }),
      ...(request.defaultOnApproval === undefined ? {} : { defaultOnApproval: request.defaultOnApproval }),
      ...(request.approvalPrompt === undefined ? {} : { approvalPrompt: request.approvalPrompt }),
      ...(request.noWaiting === undefined ? {} : { noWaiting: request.noWaiting }),
    });
  } catch (error) {
    // The run's workspace is checked as a requested one: gone, it is a refusal, not a usage error.
    if (
      error instanceof FabricError &&
      error.code === 'usage' &&
      start.workspace !== null &&
      error.message.includes(start.workspace)
    )
      throw refuse(
        runId,
        'workspace_gone',
        `its workspace ${start.workspace} is gone (${error.message}). Put the workspace back where it was, or start a new run.`,
      );
    throw error;
  }
}

/** The model and server the run was last on: its last `run_resumed` that names them, else `run_start`. */
function lastServer(
  events: readonly RunEvent[],
  start: Extract<RunEvent, { kind: 'run_start' }>,
): { model: string; server: string } {
  const resumed = events.findLast((event) => event.kind === 'run_resumed' && event.model !== undefined);
  if (resumed?.kind === 'run_resumed' && resumed.model !== undefined)
    return { model: resumed.model, server: resumed.backend };
  return { model: start.model, server: start.backend };
}

/** How the run ended, when that allows it to go on; a refusal otherwise. */
function statusToResume(
  history: RunHistory,
  runId: string,
  liveness: ProcessLiveness,
  force: boolean,
): RunStatus {
  const end = history.end;
  if (end === undefined) {
    const owner = history.owner;
    const alive = owner === undefined ? false : liveness.isOwnerAlive(owner, new Date(owner.since));
    if (alive === true)
      throw refuse(
        runId,
        'alive',
        `its process ${owner?.pid} on ${owner?.host} is still running it. Wait for it to end, or cancel it (Ctrl-C, or POST /v1/runs/${runId}/cancel), then resume.`,
      );
    if (alive === 'unknown' && !force)
      throw refuse(
        runId,
        'alive',
        `its process ${owner?.pid} runs on ${owner?.host}, and this machine cannot tell whether it is still running it. Resume it there, or with --force once you know that process is gone.`,
      );
    return 'interrupted';
  }
  switch (end.status) {
    case 'succeeded':
      throw refuse(
        runId,
        'succeeded',
        'it succeeded: there is nothing to resume. Start a new run for more work.',
      );
    case 'failed':
      if (isResumableFailure(end.error?.code)) return 'failed';
      throw refuse(
        runId,
        'failed',
        `it failed (${end.error?.code ?? 'no code'}: ${end.error?.message ?? 'no message'}), and only a run that failed because no backend answered goes on. Start a new run.`,
      );
    default:
      return end.status;
  }
}

function refuse(runId: string, reason: string, why: string): FabricError {
  return new FabricError('run_not_resumable', `Run ${runId} cannot be resumed: ${why}`, {
    details: { reason },
  });
}

/** Why a run owned by a resumer is not gone on with here, and what to do instead. */
export function resumerReason(resumer: string, workspace: string | null): string {
  if (resumer === 'daemon')
    return `it is the OpenSpec daemon's run${workspace === null ? '' : ` in ${workspace}`}: the daemon set the run's edits aside while it waits and goes on with it itself (within a second of the answer while it runs, else when it next starts). Answer its approval with fabric approvals answer ID; resuming it here (--force) would go on without its edits.`;
  return `it is resumed by ${resumer} only; resuming it here (--force) is at your own risk.`;
}

import { lastOutcome } from '../replay/run-history.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import type { LivenessCheck, RunOwner } from './liveness-ports.ts';

/**
 * A run's status as listings show it: the `run_end` status, else `running` while its owner may
 * still be at work, else `interrupted` (its process is gone without writing a `run_end`).
 */
export type RunSummaryStatus = RunStatus | 'running' | 'interrupted';

/** What a listing shows of one run, read from its runlog. */
export interface RunSummary {
  readonly run_id: string;
  readonly specialist: string | null;
  readonly task: string | null;
  readonly model: string | null;
  readonly backend: string | null;
  /** See `RunSummaryStatus`; `runStatusWithoutEnd` decides between running and interrupted. */
  readonly status: RunSummaryStatus;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly steps: number;
  readonly total_tokens: number;
  readonly payload: Record<string, unknown> | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly events: number;
  /** The process that owns (or owned) the run; null in runlogs written before it was recorded. */
  readonly owner: RunOwner | null;
}

/**
 * How long past its time budget a run whose owner cannot be checked (another host, or a runlog
 * without `pid`/`host`) is still taken as running. The loop ends every run within its budget
 * plus the final turn's grace (2 min); the rest covers a slow pack start or stop and clock skew
 * between hosts. See docs/adr/0007-interrupted-runs.md.
 */
export const UNCHECKED_OWNER_GRACE_MS = 30 * 60_000;

/** The budget assumed for a `run_start` that records none (the config's default). */
const DEFAULT_BUDGET_S = 1800;

/** Summarises a run from its events; `check` tells a run in progress from an abandoned one. */
export function summarizeRun(runId: string, events: readonly RunEvent[], check: LivenessCheck): RunSummary {
  let start: Extract<RunEvent, { kind: 'run_start' }> | undefined;
  const end = lastOutcome(events);
  let steps = 0;
  // Until run_end records the totals, the tokens so far are those of the responses so far.
  let tokens = 0;
  for (const event of events) {
    if (event.kind === 'run_start') start = event;
    else if (event.kind === 'llm_request') steps = Math.max(steps, event.step);
    else if (event.kind === 'llm_response') tokens += event.usage.total_tokens;
  }
  return {
    run_id: runId,
    specialist: start?.specialist ?? null,
    task: start?.task ?? null,
    model: start?.model ?? null,
    backend: start?.backend ?? null,
    status: end?.status ?? runStatusWithoutEnd(events, check),
    started_at: start?.ts ?? null,
    ended_at: end?.ts ?? null,
    steps: end?.steps ?? steps,
    total_tokens: end?.usage.total_tokens ?? tokens,
    payload: end?.payload ?? null,
    error: end?.error ?? null,
    events: events.length,
    owner: ownerOf(start),
  };
}

/**
 * The status of a run whose runlog has no `run_end`: `running` while its owner is alive,
 * `interrupted` once it is known gone. When the owner cannot be checked, the run is taken as
 * running until its time budget plus `UNCHECKED_OWNER_GRACE_MS` has passed, and as interrupted
 * after: no run outlives that, so none is shown running for ever.
 */
export function runStatusWithoutEnd(
  events: readonly RunEvent[],
  check: LivenessCheck,
): 'running' | 'interrupted' {
  const start = events.find((event) => event.kind === 'run_start');
  const first = events[0];
  // No line at all: the process died between creating the runlog and its first write.
  if (first === undefined) return 'interrupted';
  // A resumed run belongs to the process that resumed it last (SPEC §18).
  const resumed = events.findLast((event) => event.kind === 'run_resumed');
  const owning = resumed?.kind === 'run_resumed' ? resumed : start;
  const startedAt = new Date(owning?.ts ?? first.ts);
  const owner = ownerOf(owning);
  const alive = owner === null ? 'unknown' : check.liveness.isOwnerAlive(owner, startedAt);
  if (alive !== 'unknown') return alive ? 'running' : 'interrupted';
  const budgetS =
    typeof start?.budget_s === 'number' && start.budget_s > 0 ? start.budget_s : DEFAULT_BUDGET_S;
  const deadline = startedAt.getTime() + budgetS * 1000 + UNCHECKED_OWNER_GRACE_MS;
  // Written so that an unparsable time (NaN) counts as past: such a run is not running for ever.
  return check.now.getTime() <= deadline ? 'running' : 'interrupted';
}

function ownerOf(
  start: Extract<RunEvent, { kind: 'run_start' | 'run_resumed' }> | undefined,
): RunOwner | null {
  if (start === undefined) return null;
  const { pid, host } = start;
  if (typeof pid !== 'number' || !Number.isInteger(pid) || pid <= 0) return null;
  if (typeof host !== 'string' || host === '') return null;
  return { pid, host };
}

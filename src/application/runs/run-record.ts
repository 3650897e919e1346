/**
 * One run as every reader shows it: the summary of its events, where they came from,
 * and what the control plane adds for a run this machine has no runlog of. The CLI, HTTP, the
 * viewer and MCP each render a projection of this shape. Nothing here does I/O.
 */
import type { RunEvent, UsageFields } from '../../domain/run-events.ts';
import type { ControlRunRow } from '../control/control-ports.ts';
import type { LivenessCheck } from './liveness-ports.ts';
import { type RunSummary, type RunSummaryStatus, summarizeRun } from './run-summary.ts';

/** A run's status in a listing: a summary's, or `queued` while no worker has taken it. */
export type RunRecordStatus = RunSummaryStatus | 'queued';

/** Where a record was read from. */
export type RunRecordSource = 'live' | 'runlog' | 'control';

/** The union of what the four readers show of a run. */
export interface RunRecord extends Omit<RunSummary, 'status'> {
  readonly status: RunRecordStatus;
  /** The `run_end`'s usage; null while the run has none. */
  readonly usage: UsageFields | null;
  /** The runlog's path on this machine; null when only the control plane holds the run. */
  readonly runlog: string | null;
  /** The runlog ends with a line cut short by a killed process. */
  readonly torn: boolean;
  /** The run is in progress in this process (it can be cancelled and followed live). */
  readonly live: boolean;
  readonly source: RunRecordSource;
}

/** What a runlog (or a live run's events) says of a run. */
export function recordFromEvents(
  runId: string,
  events: readonly RunEvent[],
  where: { readonly runlog: string | null; readonly torn: boolean; readonly live: boolean },
  check: LivenessCheck,
): RunRecord {
  const end = events.findLast((event) => event.kind === 'run_end');
  const summary = summarizeRun(runId, events, check);
  return {
    ...summary,
    // This process runs it: running whatever its runlog records of its owner.
    ...(where.live && summary.status === 'interrupted' ? { status: 'running' as const } : {}),
    usage: end?.kind === 'run_end' ? { ...end.usage } : null,
    ...where,
    source: where.live ? 'live' : 'runlog',
  };
}

const OPEN = new Set(['queued', 'running']);

/**
 * A run that is in the control plane but has no runlog here (a worker's, another host's): its
 * mirrored events, and the row for what they do not say yet. Once `run_end` is mirrored the
 * events are the record; before it, the row's status stands (queued, or ended by a worker or a
 * reaper without a `run_end`), except that a row still `running` whose events show an abandoned
 * run is `interrupted` (SPEC §6: never running for ever) — unless `rowDecides`: with workers
 * and their reaper, a run is interrupted when the reaper declares its worker dead, so
 * `/v1/runs` and `/v1/workers` agree.
 */
export function recordFromControl(
  row: ControlRunRow,
  events: readonly RunEvent[],
  check: LivenessCheck,
  rowDecides = false,
): RunRecord {
  const record = recordFromEvents(row.id, events, { runlog: null, torn: false, live: false }, check);
  const filled = {
    ...record,
    specialist: record.specialist ?? row.specialist,
    task: record.task ?? row.task,
    model: record.model ?? row.model,
    backend: record.backend ?? row.backend,
    started_at: record.started_at ?? row.started_at,
    source: 'control' as const,
  };
  if (events.some((event) => event.kind === 'run_end')) return filled;
  const judged = !rowDecides && row.status === 'running' && events.length > 0 ? record.status : null;
  return {
    ...filled,
    status: judged === 'interrupted' ? judged : (row.status as RunRecordStatus),
    error: row.error,
    ended_at: OPEN.has(row.status) ? null : (row.ended_at ?? record.ended_at),
    steps: row.steps ?? record.steps,
    total_tokens: row.total_tokens ?? record.total_tokens,
    payload: row.payload,
  };
}

/**
 * A run in both the runlogs and the control plane. The runlog is the record (SPEC §6); the row
 * only ends a run the runlog leaves open: one sync or a reaper marked `interrupted` because its
 * owner is gone, which a runlog whose owner is on another host cannot tell.
 */
export function mergeRecords(runlog: RunRecord, row: ControlRunRow | null): RunRecord {
  if (row === null || runlog.source === 'live' || runlog.status !== 'running' || OPEN.has(row.status))
    return runlog;
  return { ...runlog, status: row.status as RunRecordStatus, error: runlog.error ?? row.error };
}

/** Newest start first, runs without a start last; the id (which starts with a timestamp) breaks ties. */
export function newestStartFirst(
  a: Pick<RunRecord, 'started_at' | 'run_id'>,
  b: Pick<RunRecord, 'started_at' | 'run_id'>,
): number {
  if (a.started_at !== b.started_at) {
    if (a.started_at === null) return 1;
    if (b.started_at === null) return -1;
    const order = Date.parse(b.started_at) - Date.parse(a.started_at);
    if (order !== 0 && !Number.isNaN(order)) return order;
  }
  return a.run_id < b.run_id ? 1 : a.run_id > b.run_id ? -1 : 0;
}

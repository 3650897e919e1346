import type { ControlStore } from '../../application/control/control-ports.ts';
import { type RunLogStore, hasTails } from '../../application/ports.ts';
import type { ProcessLiveness } from '../../application/runs/liveness-ports.ts';
import { runStatusWithoutEnd } from '../../application/runs/run-summary.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { LocalProcessLiveness } from '../runlog/process-liveness.ts';
import { ModelCallTracker } from './model-calls.ts';

/** What `syncRunlogs` did. Run twice, the second report has nothing inserted or updated. */
export interface SyncReport {
  readonly runsScanned: number;
  /** Runs that were behind and got rows. */
  readonly runsUpdated: number;
  readonly eventsInserted: number;
  readonly modelCallsInserted: number;
  /** Runs the store had as running whose runlog has no end and whose process is gone: now `interrupted`. */
  readonly runsInterrupted: number;
  /** Runlogs that could not be read (corrupt, vanished); the others are synced regardless. */
  readonly failed: readonly { readonly runId: string; readonly message: string }[];
}

/** Options of `syncRunlogs`. */
export interface SyncOptions {
  /** Events per transaction, so one huge runlog does not make one huge transaction. */
  readonly batchSize?: number;
  /** Told about each run as it is done, for progress output. */
  readonly onRun?: (runId: string, inserted: number) => void;
  /** Tells whether a run's owner is alive; default: this machine's processes. */
  readonly liveness?: ProcessLiveness;
  /** The time now, for owners that cannot be checked (see `runStatusWithoutEnd`). */
  readonly now?: Date;
}

/**
 * Backfills the control plane from the runlogs (`fabric control sync`): every run whose events
 * the store does not fully hold is written again; rows already there are kept (the writes are
 * keyed by (run_id, seq)), so it is idempotent and fills exactly what the mirror missed.
 * A run whose runlog has no `run_end` and whose process is gone is marked `interrupted` (only
 * where the store says `running`; a `run_end` written later still overwrites it).
 * Throws when the store itself is unreachable: this is an explicit command, not a run.
 */
export async function syncRunlogs(
  store: ControlStore,
  runLogs: RunLogStore,
  options: SyncOptions = {},
): Promise<SyncReport> {
  const batchSize = Math.max(1, options.batchSize ?? 500);
  await store.migrate();
  const mirrored = await store.mirroredRuns();
  const runIds = await runLogs.list();
  const check = { liveness: options.liveness ?? new LocalProcessLiveness(), now: options.now ?? new Date() };
  const abandoned: string[] = [];
  const failed: { runId: string; message: string }[] = [];
  let runsUpdated = 0;
  let eventsInserted = 0;
  let modelCallsInserted = 0;
  for (const runId of runIds) {
    // A run the store holds whole (its run_end and every line before it) has nothing left to
    // write: its runlog is not read again. (A run directory named otherwise than its run id is.)
    // A resumed run (SPEC §18) goes on past the run_end the store holds: its last seq tells.
    const whole = mirrored.get(runId);
    if (whole?.complete === true && !(await grewPast(runLogs, runId, whole.events))) continue;
    let events: readonly RunEvent[];
    let loggedId: string;
    try {
      const contents = await runLogs.read(runId);
      events = contents.events;
      // The id inside the lines is the key the mirror wrote, whatever the directory is called.
      loggedId = contents.runId;
    } catch (error) {
      failed.push({ runId, message: errorMessage(error) });
      continue;
    }
    const ended = events.some((event) => event.kind === 'run_end');
    if (events.length > 0 && !ended && runStatusWithoutEnd(events, check) === 'interrupted')
      abandoned.push(loggedId);
    const held = mirrored.get(loggedId);
    if (events.length === 0 || (held !== undefined && held.events >= events.length)) continue;
    const calls = ModelCallTracker.fromEvents(events);
    let inserted = 0;
    let callsInserted = 0;
    for (let start = 0; start < events.length; start += batchSize) {
      const chunk = events.slice(start, start + batchSize);
      const seqs = new Set(chunk.map((event) => event.seq));
      const counts = await store.write({
        events: chunk,
        modelCalls: calls.filter((call) => seqs.has(call.seq)),
      });
      inserted += counts.events;
      callsInserted += counts.modelCalls;
    }
    if (inserted + callsInserted > 0) runsUpdated += 1;
    eventsInserted += inserted;
    modelCallsInserted += callsInserted;
    options.onRun?.(runId, inserted);
  }
  // After the writes, so a run the store had not seen has its row to mark.
  const runsInterrupted = abandoned.length === 0 ? 0 : await store.markInterrupted(abandoned);
  return {
    runsScanned: runIds.length,
    runsUpdated,
    eventsInserted,
    modelCallsInserted,
    runsInterrupted,
    failed,
  };
}

/** Whether a run's runlog has lines past `held` (a resume appended to it); a store that cannot tell keeps the skip. */
async function grewPast(runLogs: RunLogStore, runId: string, held: number): Promise<boolean> {
  if (!hasTails(runLogs)) return false;
  const last = await runLogs.lastSeq(runId).catch(() => null);
  return last === null || last > held;
}

import type { ControlStore } from '../../application/control-ports.ts';
import type { RunLogStore } from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { ModelCallTracker } from './model-calls.ts';

/** What `syncRunlogs` did. Run twice, the second report has nothing inserted or updated. */
export interface SyncReport {
  readonly runsScanned: number;
  /** Runs that were behind and got rows. */
  readonly runsUpdated: number;
  readonly eventsInserted: number;
  readonly modelCallsInserted: number;
  /** Runlogs that could not be read (corrupt, vanished); the others are synced regardless. */
  readonly failed: readonly { readonly runId: string; readonly message: string }[];
}

/** Options of `syncRunlogs`. */
export interface SyncOptions {
  /** Events per transaction, so one huge runlog does not make one huge transaction. */
  readonly batchSize?: number;
  /** Told about each run as it is done, for progress output. */
  readonly onRun?: (runId: string, inserted: number) => void;
}

/**
 * Backfills the control plane from the runlogs (`fabric control sync`): every run whose events
 * the store does not fully hold is written again; rows already there are kept (the writes are
 * keyed by (run_id, seq)), so it is idempotent and fills exactly what the mirror missed.
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
  const failed: { runId: string; message: string }[] = [];
  let runsUpdated = 0;
  let eventsInserted = 0;
  let modelCallsInserted = 0;
  for (const runId of runIds) {
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
  return { runsScanned: runIds.length, runsUpdated, eventsInserted, modelCallsInserted, failed };
}

/**
 * The process-wide resources a Fabric opens on first use (the control plane, the run queue), the
 * trace a run sends when it ends, and the check of a hand-built run request: kept apart from the
 * composition root so it stays one screen of wiring.
 */
import type { ControlStore } from '../application/control/control-ports.ts';
import type { RunLogStore } from '../application/ports.ts';
import type { RunRequest } from '../application/run/run-request.ts';
import { exportRunTrace } from '../application/telemetry/export-run-trace.ts';
import type { SpanExporter } from '../application/telemetry/span-record.ts';
import type { FabricConfig } from '../config/load.ts';
import { FabricError, errorMessage } from '../domain/errors.ts';
import type { RunResult } from '../domain/run-result.ts';
import { ControlPlane } from '../infrastructure/control/control-plane.ts';
import { openControlStore } from '../infrastructure/control/open-control-store.ts';
import { type QueueServices, openRunQueue } from '../infrastructure/queue/open-run-queue.ts';
import type { FileRunLogStore } from '../infrastructure/runlog/file-run-log-store.ts';

/** What opening a resource needs to know of the process. */
export interface ResourceOptions {
  readonly lifetime?: 'server' | 'one_shot';
  readonly onDegraded?: (message: string) => void;
}

/**
 * The process's control plane, or null when disabled, or embedded in a `one_shot` process. A store
 * that cannot be built never fails a run (SPEC §7): the trouble is told and the run goes on db_off.
 */
export async function openFabricControlPlane(
  config: FabricConfig,
  runLogStore: FileRunLogStore,
  options: ResourceOptions,
): Promise<ControlPlane | null> {
  const embedded = config.control.dsn === undefined || config.control.dsn.trim() === '';
  if (embedded && options.lifetime === 'one_shot') return null;
  let store: ControlStore | null;
  try {
    store = await openControlStore({
      enabled: config.control.enabled,
      dsn: config.control.dsn,
      runsDir: config.runs_dir,
      cacheDir: config.cacheDir,
      poolSize: config.control.pool_size,
    });
  } catch (error) {
    options.onDegraded?.(
      `control plane unavailable (db_off): the control store could not be opened (${errorMessage(error)}); ` +
        'check control.dsn / FABRIC_DSN (postgres://user@host:5432/db). Runs go on; `fabric control sync` writes them in later.',
    );
    return null;
  }
  if (store === null) return null;
  const plane = new ControlPlane(store, runLogStore, {
    // Only the embedded database has a single holder that must pick up others' runs.
    backfillOthers: store.kind === 'pglite',
    ...(options.onDegraded === undefined ? {} : { onDegraded: options.onDegraded }),
  });
  plane.start();
  return plane;
}

/** The run queue and worker registry on the control database; a failed open says what to check. */
export function openFabricQueue(
  dsn: string,
  config: FabricConfig,
  onDegraded: ((message: string) => void) | undefined,
): Promise<QueueServices> {
  return openRunQueue(dsn, {
    poolSize: config.control.pool_size,
    onError: (error) => onDegraded?.(`run queue: ${errorMessage(error)}`),
  }).catch((error: unknown) => {
    throw new FabricError(
      'queue_unavailable',
      `The run queue could not be opened on the control database (${errorMessage(error)}); check that the Postgres of control.dsn / FABRIC_DSN runs.`,
      { cause: error },
    );
  });
}

/** Sends a run's trace once it has ended; only a failed export is told (a run that never started has none). */
export function traceWhenEnded(
  run: Promise<RunResult>,
  deps: {
    readonly runLogs: RunLogStore;
    readonly exporter: SpanExporter;
    readonly captureContent: boolean;
    readonly onDegraded: ((message: string) => void) | undefined;
  },
): Promise<void> {
  return run
    .then((result) => exportRunTrace(deps, result.run_id))
    .then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof FabricError && error.code === 'telemetry_export_failed')
          deps.onDegraded?.(`telemetry: ${error.message}`);
      },
    );
}

/**
 * What is wrong with a request an embedding program built by hand (the types say it, but a
 * JavaScript caller gets no compiler): said in one line instead of a TypeError from deep inside.
 */
export function requestProblem(request: RunRequest): string | null {
  const given = request as Partial<RunRequest> | null | undefined;
  if (given === null || typeof given !== 'object')
    return 'give a request object { specialist, task, signal }.';
  if (typeof given.specialist !== 'string' || given.specialist === '')
    return 'request.specialist must name a configured specialist.';
  if (typeof given.task !== 'string' || given.task.trim() === '')
    return 'request.task must be the text of the task.';
  if (!(given.signal instanceof AbortSignal))
    return 'request.signal must be an AbortSignal (new AbortController().signal; abort it to cancel the run).';
  return null;
}

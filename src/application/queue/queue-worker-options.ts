/** What a queue worker (queue-worker.ts) is built from, and how reaped runs are logged. */
import { plural } from '../../domain/words.ts';
import type {
  QueuedRun,
  ReapedRun,
  RunLease,
  RunQueue,
  WorkerInfo,
  WorkerLog,
  WorkerRegistry,
} from './queue-ports.ts';

/**
 * Runs a queued run to its end under its lease; rejects when it could not start (nothing was
 * written). Every write for the run is to be fenced on `lease.token`. A lease with `resumes` above
 * 0 is a run whose worker died: it is resumed from its runlog (SPEC §18), not started.
 */
export type ExecuteQueuedRun = (
  run: QueuedRun,
  signal: AbortSignal,
  lease: RunLease,
  /** Asked before each runlog line: an error once this worker lost the run (nothing more is written). */
  fence: () => Error | undefined,
) => Promise<void>;

/** What a worker is built from. */
export interface QueueWorkerOptions {
  readonly queue: RunQueue;
  readonly registry: WorkerRegistry;
  readonly execute: ExecuteQueuedRun;
  readonly identity: Pick<WorkerInfo, 'id' | 'host' | 'pid'>;
  readonly specialists: readonly string[];
  readonly concurrency: number;
  readonly heartbeatMs: number;
  /** A lease lasts this long past its last renewal; a silent worker is dead after it too. */
  readonly deadAfterMs: number;
  /** How many times a dead worker's run is handed on to be resumed (`worker.max_resumes`). */
  readonly maxResumes: number;
  /** How often an idle worker looks for jobs. Default 250 ms. */
  readonly pollMs?: number;
  /**
   * Whether the run's end and every runlog line before it are in the control plane (written by
   * the mirror or the backfill under the lease's token). A run that ended holds its lease until
   * this says so: a database blip at its end must not let a reaper mark it interrupted.
   * Without it, a run's lease is let go when its loop returns.
   */
  readonly endRecorded?: (lease: RunLease) => Promise<boolean>;
  /** A monotonic clock in ms (default `performance.now`): when leases were last renewed. */
  readonly now?: () => number;
  readonly log: WorkerLog;
}

/** Says what a reaper did with the runs whose lease expired (the worker's and the server's). */
export function logReaped(reaped: readonly ReapedRun[], log: (line: string) => void): void {
  const resumed = reaped.filter((run) => run.resumed).map((run) => run.runId);
  const interrupted = reaped.filter((run) => !run.resumed).map((run) => run.runId);
  if (resumed.length > 0)
    log(
      `sent ${plural(resumed.length, 'run')} whose lease expired to be resumed by a worker: ${resumed.join(', ')}`,
    );
  if (interrupted.length > 0)
    log(
      `marked ${plural(interrupted.length, 'run')} whose lease expired interrupted: ${interrupted.join(', ')}`,
    );
}

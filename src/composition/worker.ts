/**
 * The composition of `fabric worker` (the run queue): the queue worker's loop and its job handling
 * (application/queue/), wired to the worker's Fabric, its queue services and the battery cells'
 * workspace archive cache. The command only parses, calls and prints.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import process from 'node:process';
import { QueueWorker } from '../application/queue/queue-worker.ts';
import type { WorkerInfo } from '../application/queue/queue-ports.ts';
import { workerJobs } from '../application/queue/worker-jobs.ts';
import { FabricError } from '../domain/errors.ts';
import { cellJobFor } from './battery.ts';
import type { Fabric } from './fabric.ts';

/** What a worker takes besides its Fabric. */
export interface QueueWorkerSettings {
  /** The specialists whose runs it takes. */
  readonly specialists: readonly string[];
  /** Runs at once. */
  readonly concurrency: number;
  readonly log: (line: string) => void;
}

/** A worker ready to run: who it is, and its loop. */
export interface ComposedWorker {
  readonly identity: Pick<WorkerInfo, 'id' | 'host' | 'pid'>;
  /** Takes and runs queued runs until `signal` aborts. */
  run(signal: AbortSignal): Promise<void>;
}

/**
 * Builds this process's queue worker on `fabric` (its config says `queue: postgres`); opens the
 * queue. The caller closes the Fabric after `run` returns.
 */
export async function composeQueueWorker(
  fabric: Fabric,
  { specialists, concurrency, log }: QueueWorkerSettings,
): Promise<ComposedWorker> {
  const services = await fabric.runQueue();
  if (services === null) throw new FabricError('internal', 'The run queue is not configured.');
  const identity = {
    id: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`,
    host: hostname(),
    pid: process.pid,
  };
  // A battery's cells share its archive: fetched once per worker, unpacked per cell.
  const cellJob = cellJobFor(fabric, services);
  const worker = new QueueWorker({
    queue: services.queue,
    registry: services.workers,
    identity,
    specialists,
    concurrency,
    heartbeatMs: fabric.config.worker.heartbeat_s * 1000,
    deadAfterMs: fabric.config.worker.dead_after_s * 1000,
    log,
    execute: workerJobs({
      runTask: (request) => fabric.run(request),
      cellJob,
      log,
    }),
  });
  return { identity, run: (signal) => worker.run(signal) };
}

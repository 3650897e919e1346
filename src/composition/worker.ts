/**
 * The composition of `fabric worker` (the run queue): the queue worker's loop and its job handling
 * (application/queue/), wired to the worker's Fabric, its queue services and the battery cells'
 * workspace archive cache. The command only parses, calls and prints.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import process from 'node:process';
import { QueueWorker, logReaped } from '../application/queue/queue-worker.ts';
import type { WorkerInfo, WorkerLog } from '../application/queue/queue-ports.ts';
import { workerJobs } from '../application/queue/worker-jobs.ts';
import { FabricError, errorMessage } from '../domain/errors.ts';
import { plural } from '../domain/words.ts';
import { cellJobFor } from './battery.ts';
import type { Fabric } from './fabric.ts';

/** What a worker takes besides its Fabric. */
export interface QueueWorkerSettings {
  /** The specialists whose runs it takes. */
  readonly specialists: readonly string[];
  /** Runs at once. */
  readonly concurrency: number;
  readonly log: WorkerLog;
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
  // Every write for a run is fenced on the lease the worker took it under (issue 26).
  const store = await fabric.controlStore();
  if (store === null) throw new FabricError('internal', 'The queue needs the control plane.');
  const jobs = workerJobs({
    runTask: (request) => fabric.run(request),
    // Its lease expired: the process that ran it is gone or fenced out, on whichever host.
    resumeTask: (request) => fabric.resume(request, { isOwnerAlive: () => false }),
    cellJob,
    log,
  });
  const worker = new QueueWorker({
    queue: services.queue,
    registry: services.workers,
    identity,
    specialists,
    concurrency,
    heartbeatMs: fabric.config.worker.heartbeat_s * 1000,
    deadAfterMs: fabric.config.worker.dead_after_s * 1000,
    maxResumes: fabric.config.worker.max_resumes,
    log,
    // A run's end counts as recorded once its row ended and every runlog line up to its
    // run_end (the highest seq) is in the control plane (issue 35).
    endRecorded: async (lease) => {
      const row = await store.getRun(lease.runId);
      if (row === null || row.status === 'running' || row.status === 'queued') return false;
      const events = await store.runEvents(lease.runId);
      const last = events.at(-1);
      return last?.kind === 'run_end' && events.length === last.seq;
    },
    execute: (run, signal, lease, fence) => {
      store.fence(lease.runId, lease.token);
      return jobs(run, signal, lease, fence);
    },
  });
  return { identity, run: (signal) => worker.run(signal) };
}

/**
 * The server's reaper (`fabric serve` with `queue: postgres`): every `worker.heartbeat_s`, marks
 * silent workers dead and the runs whose lease expired interrupted, so a dead worker's runs end
 * with no live worker left. Workers reap too; the statement is idempotent. Returns its stop.
 */
export function startQueueReaper(fabric: Fabric, log: (line: string) => void): () => void {
  if (fabric.config.queue !== 'postgres') return () => {};
  const deadAfterMs = fabric.config.worker.dead_after_s * 1000;
  const maxResumes = fabric.config.worker.max_resumes;
  let busy = false;
  let failing = false;
  const reap = async () => {
    try {
      const services = await fabric.runQueue();
      const reaped = (await services?.workers.reapDeadWorkers(deadAfterMs, maxResumes)) ?? [];
      const orphans = (await services?.queue.requeueOrphans?.(deadAfterMs)) ?? [];
      if (orphans.length > 0)
        log(
          `sent again ${plural(orphans.length, 'run')} waiting for a worker (taken by none, or handed on to be resumed): ${orphans.join(', ')}`,
        );
      if (failing) log('the queue database answers again');
      failing = false;
      logReaped(reaped, log);
    } catch (error) {
      if (!failing) log(`could not reap dead workers: ${errorMessage(error)}`);
      failing = true;
    }
  };
  const timer = setInterval(() => {
    // One pass at a time: a database that hangs does not pile up passes.
    if (busy) return;
    busy = true;
    void reap().finally(() => {
      busy = false;
    });
  }, fabric.config.worker.heartbeat_s * 1000);
  (timer as { unref?: () => void }).unref?.();
  return () => clearInterval(timer);
}

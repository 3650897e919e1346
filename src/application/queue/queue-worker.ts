/**
 * `fabric worker`'s loop: takes queued runs while it has room, holds a lease on each (renewed by
 * its heartbeat), runs each through the injected `execute` (the worker's own Fabric), hears cancel
 * requests, stops the runs whose lease it could not renew in time, and marks the runs whose
 * lease expired as interrupted. Reaches the world only through ports.
 */
import { errorMessage } from '../../domain/errors.ts';
import { runInterruption } from '../../domain/run-result.ts';
import type {
  QueuedRun,
  ReapedRun,
  RunLease,
  RunQueue,
  TakenRun,
  WorkerInfo,
  WorkerLog,
  WorkerRegistry,
} from './queue-ports.ts';
import { plural } from '../../domain/words.ts';

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
  /** A monotonic clock in ms (default `performance.now`): when leases were last renewed. */
  readonly now?: () => number;
  readonly log: WorkerLog;
}

/** A run in progress on this worker. */
interface Running {
  readonly controller: AbortController;
  done: Promise<void>;
  /** Null until the registry recorded the take. */
  lease: RunLease | null;
  /** When the last renewal that succeeded was sent (the database's expiry is later). */
  renewedAt: number;
  /** Set once the run is lost (its lease taken, or expired unrenewed): it writes nothing more. */
  lost: Error | null;
}

/**
 * Takes and runs queued runs until `signal` aborts. Shutdown stops taking, cancels the runs in
 * progress (each writes its `run_end`, status `cancelled`), waits for them and reports the
 * worker `stopped`. Cancelling rather than finishing: a run can take its whole budget (30 min by
 * default) and a host being stopped rarely waits that long; a cancelled run says so, where a
 * killed one is only `interrupted`.
 */
export class QueueWorker {
  readonly #options: QueueWorkerOptions;
  readonly #running = new Map<string, Running>();
  #wake: () => void = () => {};
  #faulted = false;
  /** This worker's id: a new one each time the registry had declared it dead. */
  #id: string;
  #registrations = 1;
  #beating: Promise<void> | null = null;
  readonly #now: () => number;

  constructor(options: QueueWorkerOptions) {
    this.#options = options;
    this.#id = options.identity.id;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The id this worker is registered under now. */
  get id(): string {
    return this.#id;
  }

  /** The runs in progress. */
  runs(): string[] {
    return [...this.#running.keys()];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { queue, specialists, concurrency, log } = this.#options;
    await queue.prepare(specialists);
    await this.#beat();
    const timer = setInterval(() => this.#tick(), this.#options.heartbeatMs);
    const stop = () => this.#wake();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (!signal.aborted) {
        const room = concurrency - this.#running.size;
        let taken: readonly TakenRun[] = [];
        if (room > 0) taken = await this.#guard('take jobs', () => queue.take(specialists, room), []);
        for (const job of taken) this.#start(job);
        if (taken.length === 0 || this.#running.size >= concurrency) await this.#sleep();
      }
    } finally {
      signal.removeEventListener('abort', stop);
      clearInterval(timer);
      const left = [...this.#running.values()];
      if (left.length > 0) log(`cancelling ${plural(left.length, 'run')} in progress`);
      for (const running of left) running.controller.abort(new Error('the worker is shutting down'));
      await Promise.all(left.map((running) => running.done));
      await this.#guard(
        'report the worker stopped',
        () => this.#options.registry.stopped(this.#id),
        undefined,
      );
    }
  }

  #start(job: TakenRun): void {
    const { registry, execute, log, deadAfterMs } = this.#options;
    const { runId } = job.run;
    const controller = new AbortController();
    const running: Running = {
      controller,
      done: Promise.resolve(),
      lease: null,
      renewedAt: this.#now(),
      lost: null,
    };
    running.done = (async () => {
      const lease = await this.#guard(
        'record a taken run',
        () =>
          registry.recordTaken(runId, {
            workerId: this.#id,
            leaseMs: deadAfterMs,
            jobId: job.jobId,
            // A battery cell runs in its own copy of the battery's workspace: not resumed elsewhere.
            resumable: job.run.cell === undefined,
          }),
        undefined,
      );
      if (lease === undefined) {
        log(
          `run ${runId} not started: the queue database did not record its lease; it goes to a worker again ` +
            `once the database answers and its job is ${Math.round(deadAfterMs / 1000)} s old (worker.dead_after_s)`,
          { run_id: runId },
        );
        return;
      }
      if (lease === null) {
        // Cancelled, interrupted or ended while queued: not this worker's to run.
        log(`run ${runId} not started: it is no longer queued`, { run_id: runId });
        await this.#guard('fail a job', () => this.#options.queue.settle(job, 'not_started'), undefined);
        return;
      }
      running.lease = lease;
      const cancelled = await this.#guard(
        'read cancel requests',
        () => registry.cancelRequested([runId]),
        [],
      );
      if (cancelled.length > 0) {
        await this.#notStarted(job, lease, 'cancelled', {
          code: 'run_cancelled',
          message: 'Cancelled before it started.',
        });
        return;
      }
      const resumes = lease.resumes ?? 0;
      const started =
        resumes > 0
          ? `resumed (${job.run.specialist}, resume ${resumes})`
          : `started (${job.run.specialist})`;
      log(`run ${runId} ${started}`, { run_id: runId });
      try {
        await execute(job.run, controller.signal, lease, () => this.#fence(runId, running));
      } catch (error) {
        if (running.lost !== null) {
          // Another worker may have it now: nothing more is written for it from here, not even its end.
          log(`run ${runId} given up: ${running.lost.message}`, { run_id: runId });
          return;
        }
        const code = (error as { code?: unknown }).code;
        if (resumes > 0) {
          // What it did is in its runlog, out of this worker's reach or not to go on: it stays interrupted, with why.
          log(`run ${runId} could not be resumed: ${errorMessage(error)}`, { run_id: runId });
          await this.#notStarted(job, lease, 'interrupted', {
            code: 'run_interrupted',
            message: `Its worker stopped renewing its lease (died, or cut off from the database), and worker ${this.#id} could not resume it: ${errorMessage(error)}`,
          });
          return;
        }
        log(`run ${runId} could not start: ${errorMessage(error)}`, { run_id: runId });
        await this.#notStarted(job, lease, 'failed', {
          code: typeof code === 'string' ? code : 'internal',
          message: errorMessage(error),
        });
        return;
      }
      log(`run ${runId} ended`, { run_id: runId });
      await this.#guard('complete a job', () => this.#options.queue.settle(job, 'ended'), undefined);
    })().finally(() => {
      this.#running.delete(runId);
      this.#wake();
    });
    this.#running.set(runId, running);
  }

  async #notStarted(
    job: TakenRun,
    lease: RunLease,
    status: 'failed' | 'cancelled' | 'interrupted',
    error: { code: string; message: string },
  ): Promise<void> {
    const { registry, queue } = this.#options;
    await this.#guard(
      'record a run that did not start',
      () => registry.recordNotStarted(lease, status, error),
      undefined,
    );
    await this.#guard('fail a job', () => queue.settle(job, 'not_started'), undefined);
  }

  /**
   * Each heartbeat period: first, without the database, the runs whose lease is about to expire
   * unrenewed (`deadAfterMs`) are stopped (the database may be out of reach: by now others may have marked
   * them interrupted); then a beat, unless the last one still waits for the database.
   */
  #tick(): void {
    const { deadAfterMs, heartbeatMs } = this.#options;
    const now = this.#now();
    // Stopped before the lease can expire: this check runs once a heartbeat period, so two
    // periods of margin (half the lease at most) keep the stop ahead of any reaper.
    const limit = deadAfterMs - Math.min(2 * heartbeatMs, deadAfterMs / 2);
    for (const [runId, running] of this.#running) {
      if (this.#fence(runId, running) !== undefined) continue;
      if (running.controller.signal.aborted || now - running.renewedAt <= limit) continue;
      this.#interrupt(
        runId,
        running,
        `its lease could not be renewed before it expires (worker.dead_after_s ${deadAfterMs / 1000} s: the queue database is out of reach)`,
      );
    }
    this.#beating ??= this.#beat().finally(() => {
      this.#beating = null;
    });
  }

  /**
   * The run's fence: lost once a renewal found the lease gone, or once the lease has certainly
   * expired unrenewed (this process was paused or cut off past it): the reaper may have handed
   * the run on, and the worker that resumes it appends to the same runlog.
   */
  #fence(runId: string, running: Running): Error | undefined {
    if (running.lost === null && this.#now() - running.renewedAt > this.#options.deadAfterMs)
      this.#lose(
        runId,
        running,
        `its lease expired unrenewed (worker.dead_after_s ${this.#options.deadAfterMs / 1000} s), so another worker may have it; this worker writes nothing more to it`,
      );
    return running.lost ?? undefined;
  }

  #lose(runId: string, running: Running, why: string): void {
    if (running.lost !== null) return;
    running.lost = new Error(why);
    this.#options.log(`run ${runId} lost: ${why}`, { run_id: runId });
    running.controller.abort(running.lost);
  }

  #interrupt(runId: string, running: Running, why: string): void {
    this.#options.log(`run ${runId} stopped: ${why}; it is interrupted`, { run_id: runId });
    running.controller.abort(runInterruption(`Interrupted by its worker: ${why}.`));
  }

  /** Heartbeat (registering anew if declared dead), leases, cancel requests, and expired leases. */
  async #beat(): Promise<void> {
    const { registry, identity, specialists, concurrency, deadAfterMs, maxResumes, log } = this.#options;
    const runs = this.runs();
    const info = () => ({ ...identity, id: this.#id, specialists, concurrency, runs });
    const alive = await this.#guard('write the heartbeat', () => registry.heartbeat(info()), null);
    if (alive === null) return;
    // Said only once a write went through (not on a call that needed no database).
    if (this.#faulted) log('the queue database answers again');
    this.#faulted = false;
    if (!alive) {
      const old = this.#id;
      this.#registrations += 1;
      this.#id = `${identity.id}-${this.#registrations}`;
      log(`${old} was declared dead while out of reach; registering again as ${this.#id}`);
      await this.#guard('write the heartbeat', () => registry.heartbeat(info()), true);
    }
    await this.#renew();
    const cancelled =
      runs.length === 0
        ? []
        : await this.#guard('read cancel requests', () => registry.cancelRequested(runs), []);
    for (const runId of cancelled)
      this.#running.get(runId)?.controller.abort(new Error('cancelled through the HTTP API'));
    const reaped = await this.#guard(
      'reap dead workers',
      () => registry.reapDeadWorkers(deadAfterMs, maxResumes),
      [],
    );
    logReaped(reaped, log);
    const requeue = this.#options.queue.requeueOrphans?.bind(this.#options.queue);
    if (requeue === undefined) return;
    const orphans = await this.#guard('requeue orphaned jobs', () => requeue(deadAfterMs), []);
    if (orphans.length > 0)
      log(
        `sent again ${plural(orphans.length, 'run')} waiting for a worker (taken by none, or handed on to be resumed): ${orphans.join(', ')}`,
      );
  }

  /** Renews the leases of the runs in progress; a run whose lease is gone is stopped at once. */
  async #renew(): Promise<void> {
    const held = [...this.#running.entries()].filter(
      ([, running]) => running.lease !== null && !running.controller.signal.aborted,
    );
    if (held.length === 0) return;
    const sent = this.#now();
    const leases = held.map(([, running]) => running.lease as RunLease);
    const renewed = await this.#guard(
      'renew leases',
      () => this.#options.registry.renewLeases(this.#id, leases, this.#options.deadAfterMs),
      null,
    );
    if (renewed === null) return;
    const kept = new Set(renewed);
    for (const [runId, running] of held) {
      if (kept.has(runId)) running.renewedAt = Math.max(running.renewedAt, sent);
      else
        this.#lose(
          runId,
          running,
          'its lease was lost (reaped, or taken by another worker meanwhile); this worker writes nothing more to it',
        );
    }
  }

  /** Waits for the poll interval, a run that ends, or shutdown. */
  #sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.#options.pollMs ?? 250);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }

  /**
   * A database fault never ends the worker: it is said once per outage (until a heartbeat is
   * written again), and the work goes on.
   */
  async #guard<T>(what: string, work: () => Promise<T>, fallback: T): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!this.#faulted) this.#options.log(`could not ${what}: ${errorMessage(error)}`);
      this.#faulted = true;
      return fallback;
    }
  }
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

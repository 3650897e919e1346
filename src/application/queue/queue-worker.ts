/**
 * `fabric worker`'s loop: takes queued runs while it has room, holds a lease on each (renewed by
 * its heartbeat), runs each through the injected `execute` (the worker's own Fabric), hears cancel
 * requests, stops the runs whose lease it could not renew in time, and marks the runs whose
 * lease expired as interrupted. Reaches the world only through ports.
 */
import { errorMessage } from '../../domain/errors.ts';
import { runInterruption } from '../../domain/run-result.ts';
import type { RunLease, TakenRun } from './queue-ports.ts';
import type { QueueWorkerOptions } from './queue-worker-options.ts';
import { plural } from '../../domain/words.ts';
import { logReaped } from './queue-worker-options.ts';

export { type ExecuteQueuedRun, type QueueWorkerOptions, logReaped } from './queue-worker-options.ts';

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
  /** Its loop returned: it holds its lease only until its end is recorded. */
  ended: boolean;
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
  #lastBeat = 0;
  #stopping = false;
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
    this.#lastBeat = this.#now();
    await this.#beat();
    const timer = setInterval(() => this.#tick(), this.#checkMs());
    const stop = () => this.#wake();
    signal.addEventListener('abort', stop, { once: true });
    try {
      while (!signal.aborted) {
        const room = concurrency - this.#active();
        let taken: readonly TakenRun[] = [];
        if (room > 0) taken = await this.#guard('take jobs', () => queue.take(specialists, room), []);
        for (const job of taken) this.#start(job);
        if (taken.length === 0 || this.#active() >= concurrency) await this.#sleep();
      }
    } finally {
      signal.removeEventListener('abort', stop);
      this.#stopping = true;
      const left = [...this.#running.values()];
      if (left.length > 0) log(`cancelling ${plural(left.length, 'run')} in progress`);
      for (const running of left) running.controller.abort(new Error('the worker is shutting down'));
      await Promise.all(left.map((running) => running.done));
      clearInterval(timer);
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
      ended: false,
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
      running.ended = true;
      await this.#holdUntilRecorded(runId, running, lease);
      await this.#guard('complete a job', () => this.#options.queue.settle(job, 'ended'), undefined);
    })().finally(() => {
      this.#running.delete(runId);
      this.#wake();
    });
    this.#running.set(runId, running);
  }

  /** Runs in progress (not those that ended and only wait for their end to be recorded). */
  #active(): number {
    let active = 0;
    for (const running of this.#running.values()) if (!running.ended) active += 1;
    return active;
  }

  /**
   * Keeps the ended run's lease (renewed by the heartbeat) until its end and every runlog line
   * are in the control plane, so a reaper never takes a run whose end is only late (a short
   * database cut). It stops once the lease is lost (another process took the run), or, when the
   * worker is shutting down, after `dead_after_s` more.
   */
  async #holdUntilRecorded(runId: string, running: Running, lease: RunLease): Promise<void> {
    const check = this.#options.endRecorded;
    if (check === undefined) return;
    const since = this.#now();
    let said = false;
    for (;;) {
      if (this.#fence(runId, running) !== undefined) return;
      if (await this.#guard('check that a run end is recorded', () => check(lease), false)) return;
      if (this.#stopping && this.#now() - since > this.#options.deadAfterMs) {
        this.#options.log(
          `run ${runId}: its end is not in the control plane yet; the worker stops anyway (the backfill of another process, or \`fabric control sync\`, writes it from the runlog)`,
          { run_id: runId },
        );
        return;
      }
      if (!said)
        this.#options.log(`run ${runId}: holding its lease until its end is in the control plane`, {
          run_id: runId,
        });
      said = true;
      await new Promise((resolve) => setTimeout(resolve, this.#options.heartbeatMs));
    }
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

  /** How often leases are checked without the database, and a failed beat tried again. */
  #checkMs(): number {
    return Math.min(500, this.#options.heartbeatMs / 4);
  }

  /**
   * Without the database, stops the runs whose lease is about to expire unrenewed; then a beat
   * each heartbeat period, or at once after one the database did not answer, so a cut shorter
   * than dead_after_s costs no lease (issue 35: 2.5 s at heartbeat_s 3, dead_after_s 6).
   */
  #tick(): void {
    const { deadAfterMs, heartbeatMs } = this.#options;
    const now = this.#now();
    // Checked every #checkMs: two heartbeats of margin, at most 1 s (and half the lease).
    const margin = Math.min(2 * heartbeatMs, Math.max(2 * this.#checkMs(), 1000), deadAfterMs / 2);
    const limit = deadAfterMs - margin;
    for (const [runId, running] of this.#running) {
      if (this.#fence(runId, running) !== undefined || running.ended) continue;
      if (running.controller.signal.aborted || now - running.renewedAt <= limit) continue;
      this.#interrupt(
        runId,
        running,
        `its lease could not be renewed before it expires (worker.dead_after_s ${deadAfterMs / 1000} s: the queue database is out of reach)`,
      );
    }
    if (
      this.#beating !== null ||
      now - this.#lastBeat < (this.#faulted ? 0 : heartbeatMs - this.#checkMs() / 2)
    )
      return;
    this.#lastBeat = now;
    this.#beating = this.#beat().finally(() => {
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
      ([, running]) =>
        running.lease !== null &&
        running.lost === null &&
        (running.ended || !running.controller.signal.aborted),
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

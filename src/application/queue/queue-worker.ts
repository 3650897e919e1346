/**
 * `fabric worker`'s loop: takes queued runs while it has room, runs each through
 * the injected `execute` (the worker's own Fabric), heartbeats, hears cancel requests, and marks
 * the runs of workers whose heartbeat stopped as interrupted. Reaches the world only through ports.
 */
import { errorMessage } from '../../domain/errors.ts';
import type { QueuedRun, RunQueue, TakenRun, WorkerInfo, WorkerRegistry } from './queue-ports.ts';
import { plural } from '../../domain/words.ts';

/** Runs a queued run to its end; rejects when it could not start (nothing was written). */
export type ExecuteQueuedRun = (run: QueuedRun, signal: AbortSignal) => Promise<void>;

/** What a worker is built from. */
export interface QueueWorkerOptions {
  readonly queue: RunQueue;
  readonly registry: WorkerRegistry;
  readonly execute: ExecuteQueuedRun;
  readonly identity: Pick<WorkerInfo, 'id' | 'host' | 'pid'>;
  readonly specialists: readonly string[];
  readonly concurrency: number;
  readonly heartbeatMs: number;
  readonly deadAfterMs: number;
  /** How often an idle worker looks for jobs. Default 250 ms. */
  readonly pollMs?: number;
  readonly log: (line: string) => void;
}

/** A run in progress on this worker. */
interface Running {
  readonly controller: AbortController;
  readonly done: Promise<void>;
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

  constructor(options: QueueWorkerOptions) {
    this.#options = options;
  }

  /** The runs in progress. */
  runs(): string[] {
    return [...this.#running.keys()];
  }

  async run(signal: AbortSignal): Promise<void> {
    const { queue, specialists, concurrency, log } = this.#options;
    await queue.prepare(specialists);
    await this.#beat();
    const timer = setInterval(() => void this.#beat(), this.#options.heartbeatMs);
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
        () => this.#options.registry.stopped(this.#options.identity.id),
        undefined,
      );
    }
  }

  #start(job: TakenRun): void {
    const { registry, execute, log } = this.#options;
    const { runId } = job.run;
    const controller = new AbortController();
    const done = (async () => {
      await this.#guard('record a taken run', () => registry.recordTaken(runId), undefined);
      const cancelled = await this.#guard(
        'read cancel requests',
        () => registry.cancelRequested([runId]),
        [],
      );
      if (cancelled.length > 0) {
        await this.#notStarted(job, 'cancelled', {
          code: 'run_cancelled',
          message: 'Cancelled before it started.',
        });
        return;
      }
      log(`run ${runId} started (${job.run.specialist})`);
      try {
        await execute(job.run, controller.signal);
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        log(`run ${runId} could not start: ${errorMessage(error)}`);
        await this.#notStarted(job, 'failed', {
          code: typeof code === 'string' ? code : 'internal',
          message: errorMessage(error),
        });
        return;
      }
      log(`run ${runId} ended`);
      await this.#guard('complete a job', () => this.#options.queue.settle(job, 'ended'), undefined);
    })().finally(() => {
      this.#running.delete(runId);
      this.#wake();
    });
    this.#running.set(runId, { controller, done });
  }

  async #notStarted(
    job: TakenRun,
    status: 'failed' | 'cancelled',
    error: { code: string; message: string },
  ): Promise<void> {
    const { registry, queue } = this.#options;
    await this.#guard(
      'record a run that did not start',
      () => registry.recordNotStarted(job.run.runId, status, error),
      undefined,
    );
    await this.#guard('fail a job', () => queue.settle(job, 'not_started'), undefined);
  }

  /** Heartbeat, cancel requests for the runs in progress, and dead workers' runs. */
  async #beat(): Promise<void> {
    const { registry, identity, specialists, concurrency, deadAfterMs, log } = this.#options;
    const runs = this.runs();
    await this.#guard(
      'write the heartbeat',
      () => registry.heartbeat({ ...identity, specialists, concurrency, runs }),
      undefined,
    );
    const cancelled = await this.#guard('read cancel requests', () => registry.cancelRequested(runs), []);
    for (const runId of cancelled)
      this.#running.get(runId)?.controller.abort(new Error('cancelled through the HTTP API'));
    const interrupted = await this.#guard(
      'reap dead workers',
      () => registry.reapDeadWorkers(deadAfterMs),
      [],
    );
    if (interrupted.length > 0)
      log(
        `marked ${plural(interrupted.length, 'run')} of dead workers interrupted: ${interrupted.join(', ')}`,
      );
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

  /** A database fault never ends the worker: it is said once per outage, and the work goes on. */
  async #guard<T>(what: string, work: () => Promise<T>, fallback: T): Promise<T> {
    try {
      const value = await work();
      if (this.#faulted) this.#options.log('the queue database answers again');
      this.#faulted = false;
      return value;
    } catch (error) {
      if (!this.#faulted) this.#options.log(`could not ${what}: ${errorMessage(error)}`);
      this.#faulted = true;
      return fallback;
    }
  }
}

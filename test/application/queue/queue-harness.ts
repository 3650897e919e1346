import type { Clock } from '../../../src/application/ports.ts';
import type { QueuedRun } from '../../../src/application/queue/queue-ports.ts';
import type { RunRequest, RunTask } from '../../../src/application/run/run-request.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { MemoryRunQueue } from '../../../src/infrastructure/memory/memory-run-queue.ts';
import { MemoryWorkerRegistry } from '../../../src/infrastructure/memory/memory-worker-registry.ts';

/** A clock the test moves by hand. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start = Date.parse('2026-01-01T00:00:00Z')) {
    this.#now = start;
  }
  now(): Date {
    return new Date(this.#now);
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}

/** A run the scripted task has started: its request, and how the test ends it. */
export interface ScriptedRun {
  readonly request: RunRequest;
  /** Ends the run with this status. */
  end(status?: RunResult['status']): void;
  /** Settles once the run has ended, however. */
  readonly ended: Promise<RunResult['status']>;
}

/**
 * A `RunTask` whose runs last until the test ends them (or their signal aborts: `cancelled`),
 * or that rejects at once for the tasks `failures` names, as a run that cannot start does.
 */
export class ScriptedRunTask {
  readonly started: ScriptedRun[] = [];
  readonly #failures: ReadonlyMap<string, Error>;

  constructor(failures: ReadonlyMap<string, Error> = new Map()) {
    this.#failures = failures;
  }

  readonly run: RunTask = (request) => {
    const failure = this.#failures.get(request.task);
    if (failure !== undefined) return Promise.reject(failure);
    let end: (status: RunResult['status']) => void = () => {};
    const ended = new Promise<RunResult['status']>((resolve) => {
      end = resolve;
    });
    request.signal.addEventListener('abort', () => end('cancelled'), { once: true });
    this.started.push({ request, end: (status = 'succeeded') => end(status), ended });
    return ended.then((status) => resultOf(request.runId ?? 'unknown', status));
  };

  /** The started run with this id. */
  byId(runId: string): ScriptedRun {
    const run = this.started.find((started) => started.request.runId === runId);
    if (run === undefined) throw new Error(`run ${runId} has not started`);
    return run;
  }
}

function resultOf(runId: string, status: RunResult['status']): RunResult {
  return {
    run_id: runId,
    status,
    payload: status === 'succeeded' ? { summary: 'done' } : null,
    error: null,
    model: 'scripted',
    backend: 'scripted',
    steps: 1,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    runlog: `/runs/${runId}/runlog.jsonl`,
  };
}

/** A queued run of `specialist`. */
export function queued(runId: string, specialist = 'units', task = `task of ${runId}`): QueuedRun {
  return { runId, specialist, task };
}

/** A queue and a registry in memory, sharing a manual clock. */
export function memoryQueue() {
  const clock = new ManualClock();
  return { clock, queue: new MemoryRunQueue(), registry: new MemoryWorkerRegistry(clock) };
}

/** Waits (microtasks and short timers) until `probe` holds; fails after a generous bound. */
export async function until(what: string, probe: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

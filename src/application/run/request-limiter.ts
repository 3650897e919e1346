import { FabricError } from '../../domain/errors.ts';
import type { ChatClient, ChatRequest, ChatStreamEvent, ChatTurn } from '../ports.ts';

interface Waiter {
  readonly priority: number;
  readonly grant: () => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

/**
 * A counting semaphore for model requests. Orchestration only caps how many requests are in
 * flight at once across all runs of a process (SPEC §2); which server answers stays the
 * adapters' business. Waiters are served in the order their runs started (lower `priority`
 * first; equal priorities first come, first served), so under load the earlier runs finish first
 * instead of every run finishing at the end (SPEC §10). A waiter leaves the queue when its run is
 * cancelled.
 */
export class RequestLimiter {
  readonly #max: number;
  #active = 0;
  /** Sorted by priority, then arrival. */
  readonly #queue: Waiter[] = [];

  constructor(max: number) {
    this.#max = max;
  }

  /** Requests waiting for a slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** Requests in flight. */
  get active(): number {
    return this.#active;
  }

  /**
   * Runs `work` once a slot is free; the slot is released however `work` ends. `priority` is
   * the run's start order (default: after every run numbered so far).
   */
  async run<T>(signal: AbortSignal, work: () => Promise<T>, priority = Number.MAX_SAFE_INTEGER): Promise<T> {
    await this.#acquire(signal, priority);
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  #acquire(signal: AbortSignal, priority: number): Promise<void> {
    if (signal.aborted) return Promise.reject(cancelled(signal));
    if (this.#active < this.#max) {
      this.#active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry: Waiter = {
        priority,
        signal,
        grant: () => {
          signal.removeEventListener('abort', entry.onAbort);
          resolve();
        },
        onAbort: () => {
          const index = this.#queue.indexOf(entry);
          if (index >= 0) this.#queue.splice(index, 1);
          reject(cancelled(signal));
        },
      };
      signal.addEventListener('abort', entry.onAbort, { once: true });
      // After every waiter of the same or an earlier run: stable within a run, earlier runs first.
      let at = this.#queue.length;
      while (at > 0 && this.#queue[at - 1]!.priority > priority) at -= 1;
      this.#queue.splice(at, 0, entry);
    });
  }

  #release(): void {
    const next = this.#queue.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) next.grant();
    else this.#active -= 1;
  }
}

/** A ChatClient whose requests go through a limiter, at the priority of its run (its start order). */
export function limitRequests(chat: ChatClient, limiter: RequestLimiter, priority?: number): ChatClient {
  return {
    backend: chat.backend,
    complete: (request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> =>
      limiter.run(request.signal, () => chat.complete(request, onEvent), priority),
  };
}

function cancelled(signal: AbortSignal): FabricError {
  return new FabricError('run_cancelled', 'The run was cancelled while waiting for a model slot.', {
    cause: signal.reason,
  });
}

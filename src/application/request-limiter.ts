import { FabricError } from '../domain/errors.ts';
import type { ChatClient, ChatRequest, ChatStreamEvent, ChatTurn } from './ports.ts';

/**
 * A counting semaphore for model requests. Orchestration only caps how many requests are in
 * flight at once across all runs of a process (SPEC §2, issue 4); which server answers stays the
 * adapters' business. Waiters are served first come, first served, and leave the queue when
 * their run is cancelled.
 */
export class RequestLimiter {
  readonly #max: number;
  #active = 0;
  readonly #queue: { grant: () => void; signal: AbortSignal; onAbort: () => void }[] = [];

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

  /** Runs `work` once a slot is free; the slot is released however `work` ends. */
  async run<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
    await this.#acquire(signal);
    try {
      return await work();
    } finally {
      this.#release();
    }
  }

  #acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.reject(cancelled(signal));
    if (this.#active < this.#max) {
      this.#active += 1;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const entry = {
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
      this.#queue.push(entry);
    });
  }

  #release(): void {
    const next = this.#queue.shift();
    // The slot passes straight to the next waiter, so `active` stays the same.
    if (next) next.grant();
    else this.#active -= 1;
  }
}

/** A ChatClient whose requests go through a limiter. */
export function limitRequests(chat: ChatClient, limiter: RequestLimiter): ChatClient {
  return {
    backend: chat.backend,
    complete: (request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> =>
      limiter.run(request.signal, () => chat.complete(request, onEvent)),
  };
}

function cancelled(signal: AbortSignal): FabricError {
  return new FabricError('run_cancelled', 'The run was cancelled while waiting for a model slot.', {
    cause: signal.reason,
  });
}

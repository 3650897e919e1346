import type { ChatStreamEvent } from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import { type RetryPolicy, backoffDelay, sleep } from './backoff.ts';
import type { ClassifiedFault } from './classify-error.ts';
import { plural } from '../../domain/words.ts';

/** One backend's retry of one request: what to try, how to judge a failure, what to tell the user. */
export interface RetryLoopOptions<T> {
  readonly label: string;
  readonly retry: RetryPolicy;
  readonly signal: AbortSignal;
  readonly onEvent: (event: ChatStreamEvent) => void;
  readonly attempt: () => Promise<T>;
  readonly classify: (error: unknown) => ClassifiedFault;
  /** The advice ending the error when every attempt failed, e.g. `Check that Ollama is running…`. */
  readonly giveUpHint: string;
  readonly random?: (() => number) | undefined;
}

/**
 * Runs `attempt` until it succeeds, a fault is not transient, or the attempts are used up, with
 * exponential backoff and jitter between tries, each retry reported as a `retry` event.
 * Throws `run_cancelled` as soon as the signal aborts, and `backend_unavailable` at the end.
 */
export async function withRetries<T>(options: RetryLoopOptions<T>): Promise<{ value: T; attempts: number }> {
  const { retry, signal } = options;
  let lastReason = '';
  for (let attempt = 1; attempt <= retry.maxAttempts; attempt += 1) {
    if (signal.aborted) throw cancelled(signal);
    try {
      return { value: await options.attempt(), attempts: attempt };
    } catch (error) {
      if (signal.aborted) throw cancelled(signal);
      const fault = options.classify(error);
      if (!fault.transient) throw fault.error;
      lastReason = fault.reason;
      if (attempt === retry.maxAttempts) break;
      const delayMs = fault.waitMs ?? backoffDelay(retry, attempt, options.random);
      options.onEvent({ type: 'retry', attempt, delayMs, reason: fault.reason });
      await sleep(delayMs, signal).catch(() => {
        throw cancelled(signal);
      });
    }
  }
  throw new FabricError(
    'backend_unavailable',
    `${options.label} failed ${plural(retry.maxAttempts, 'time')} (${lastReason}). ${options.giveUpHint}`,
    { details: { attempts: retry.maxAttempts, reason: lastReason } },
  );
}

function cancelled(signal: AbortSignal): FabricError {
  return new FabricError('run_cancelled', 'The request was cancelled.', { cause: signal.reason });
}

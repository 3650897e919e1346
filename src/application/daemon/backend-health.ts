/**
 * Backend connection health as the daemon keeps it (SPEC §11): no attempt is spent while no
 * model is reachable; the daemon waits with exponential backoff, capped at the interval.
 */
import type { BackendHealth } from './daemon-state.ts';

/** How long the daemon waits for a backend that is down. */
export interface Backoff {
  /** The first wait; it doubles with each failure in a row. */
  readonly baseMs: number;
  /** The longest wait (the rescan interval). */
  readonly capMs: number;
}

/** Records one more failure in a row; returns how long to wait before the next try. */
export function markBackendDown(backend: BackendHealth, message: string, backoff: Backoff): number {
  backend.state = 'down';
  backend.failures += 1;
  backend.last_error = message;
  const waitMs = Math.min(backoff.baseMs * 2 ** (backend.failures - 1), backoff.capMs);
  backend.backoff_s = waitMs / 1000;
  return waitMs;
}

/** Records that a model answered at `now`; returns whether the backend was down until then. */
export function markBackendUp(backend: BackendHealth, now: Date): boolean {
  const wasDown = backend.state === 'down';
  Object.assign(backend, {
    state: 'up',
    last_ok: now.toISOString(),
    failures: 0,
    backoff_s: 0,
    last_error: null,
  });
  return wasDown;
}

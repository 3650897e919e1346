import { sleep } from './backoff.ts';

/**
 * A hosted endpoint's own limiter (prompt-prix ADR-006: the adapter owns its resource strategy):
 * requests leave at most `requestsPerMinute` a minute, and a 429's `retry-after` holds every
 * request of the backend until it has passed, not just the one that was refused.
 */
export class RateGate {
  readonly #spacingMs: number;
  #next = 0;

  constructor(requestsPerMinute: number | undefined) {
    this.#spacingMs = requestsPerMinute === undefined ? 0 : Math.ceil(60_000 / requestsPerMinute);
  }

  /** Waits for this request's turn. */
  async wait(signal: AbortSignal): Promise<void> {
    const now = Date.now();
    const at = Math.max(this.#next, now);
    this.#next = at + this.#spacingMs;
    if (at > now) await sleep(at - now, signal);
  }

  /** Nothing leaves before `ms` from now (the server said when to come back). */
  hold(ms: number): void {
    this.#next = Math.max(this.#next, Date.now() + ms);
  }
}

/** The longest a server's "come back later" is honoured; past it the request fails as unavailable. */
export const MAX_RETRY_AFTER_MS = 120_000;

/**
 * How long a 429 (or 503) asks to wait, from its headers: `retry-after-ms`, `retry-after`
 * (seconds or an HTTP date), else OpenAI's `x-ratelimit-reset-requests` / `-tokens` (`1s`,
 * `6m0s`, `20ms`), the longer of the two. Undefined when none says.
 */
export function retryAfterMs(headers: Headers | undefined, now = Date.now()): number | undefined {
  if (headers === undefined) return undefined;
  const ms = Number(headers.get('retry-after-ms'));
  if (headers.get('retry-after-ms') !== null && Number.isFinite(ms) && ms >= 0) return ms;
  const after = headers.get('retry-after');
  if (after !== null) {
    const seconds = Number(after);
    if (after.trim() !== '' && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
    const date = Date.parse(after);
    if (Number.isFinite(date)) return Math.max(0, date - now);
  }
  const resets = ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens']
    .map((name) => parseDuration(headers.get(name)))
    .filter((value): value is number => value !== undefined);
  return resets.length === 0 ? undefined : Math.max(...resets);
}

/** `1h2m3.5s`, `6m0s`, `20ms`, `1s` as milliseconds. */
function parseDuration(text: string | null): number | undefined {
  if (text === null) return undefined;
  const parts = [...text.trim().matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text.trim()) return undefined;
  const unit: Record<string, number> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1 };
  return parts.reduce((sum, [, value, name]) => sum + Number(value) * (unit[name ?? 's'] ?? 0), 0);
}

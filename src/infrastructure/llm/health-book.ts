/** How long a backend that failed is skipped, unless nothing else is left (SPEC §5). */
export const DEFAULT_DOWN_FOR_MS = 30_000;

/**
 * Remembers which backends (or LM Studio servers) failed recently. A key marked down is skipped
 * for `downForMs`, then tried again; a success marks it up at once.
 */
export class HealthBook {
  readonly #downUntil = new Map<string, { until: number; reason: string }>();
  readonly #downForMs: number;
  readonly #now: () => number;

  constructor(options: { downForMs?: number; now?: () => number } = {}) {
    this.#downForMs = options.downForMs ?? DEFAULT_DOWN_FOR_MS;
    this.#now = options.now ?? Date.now;
  }

  markDown(key: string, reason: string): void {
    this.#downUntil.set(key, { until: this.#now() + this.#downForMs, reason });
  }

  markUp(key: string): void {
    this.#downUntil.delete(key);
  }

  isDown(key: string): boolean {
    const entry = this.#downUntil.get(key);
    if (entry === undefined) return false;
    if (entry.until > this.#now()) return true;
    this.#downUntil.delete(key);
    return false;
  }

  /** Why the key is down, while it is. */
  reason(key: string): string | undefined {
    return this.isDown(key) ? this.#downUntil.get(key)?.reason : undefined;
  }

  /** Orders keys healthy first (in the given order), then the down ones, longest down first. */
  order<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
    const healthy = items.filter((item) => !this.isDown(keyOf(item)));
    const down = items
      .filter((item) => this.isDown(keyOf(item)))
      .sort(
        (a, b) => (this.#downUntil.get(keyOf(a))?.until ?? 0) - (this.#downUntil.get(keyOf(b))?.until ?? 0),
      );
    return [...healthy, ...down];
  }
}

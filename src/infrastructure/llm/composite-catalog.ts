import type { BackendProbe, ModelCatalog } from '../../application/ports.ts';
import { DEFAULT_DOWN_FOR_MS } from './health-book.ts';

/** How long an answer in which every backend answered is trusted. */
export const DEFAULT_MAX_AGE_MS = 30_000;

/**
 * Every backend's catalog, asked concurrently (each with its own short timeout). The answer is
 * cached for `maxAgeMs` (default 30 s), so a long-lived process (`fabric serve`, the daemon, a
 * battery) sees a model loaded or unloaded within that; an answer in which some backend failed
 * is kept only for `retryFailedAfterMs`, and `invalidate()` drops it at once (a chat request
 * found a backend down).
 */
export class CompositeCatalog implements ModelCatalog {
  readonly #catalogs: readonly ModelCatalog[];
  readonly #retryFailedAfterMs: number;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  #cached: Promise<readonly BackendProbe[]> | undefined;
  #expiresAt = Number.POSITIVE_INFINITY;
  #sawLoading = false;

  constructor(
    catalogs: readonly ModelCatalog[],
    options: { retryFailedAfterMs?: number; maxAgeMs?: number; now?: () => number } = {},
  ) {
    this.#catalogs = catalogs;
    this.#retryFailedAfterMs = options.retryFailedAfterMs ?? DEFAULT_DOWN_FOR_MS;
    this.#maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
    this.#now = options.now ?? Date.now;
  }

  probe(signal?: AbortSignal, onProgress?: (message: string) => void): Promise<readonly BackendProbe[]> {
    if (this.#cached !== undefined && this.#now() < this.#expiresAt) {
      // A caller that waits for a loading server (a run) asks again when the answer found one loading.
      if (onProgress === undefined || !this.#sawLoading) return this.#cached;
    }
    this.#expiresAt = Number.POSITIVE_INFINITY;
    const pending = Promise.all(this.#catalogs.map((catalog) => catalog.probe(signal, onProgress))).then(
      (lists) => lists.flat(),
    );
    this.#cached = pending;
    this.#sawLoading = false;
    pending.then(
      (probes) => {
        if (this.#cached !== pending) return;
        this.#sawLoading = probes.some((probe) => probe.loading === true);
        const keepFor = probes.some((probe) => !probe.ok) ? this.#retryFailedAfterMs : this.#maxAgeMs;
        this.#expiresAt = this.#now() + keepFor;
      },
      () => {
        // A cancelled probe must not poison the cache.
        if (this.#cached === pending) this.#cached = undefined;
      },
    );
    return pending;
  }

  /** Forgets the cached answer, so the next `probe` asks every backend again. */
  invalidate(): void {
    this.#cached = undefined;
    this.#expiresAt = Number.POSITIVE_INFINITY;
  }
}

import type { RunLogStore } from '../../../application/ports.ts';
import type { RunHub } from '../run-hub.ts';
import type { RunView } from '../run-view.ts';
import type { RunIndex } from './run-index.ts';

/** What the feed waits for before it sends: a run's burst of events becomes one update. */
const FLUSH_MS = 250;
/** How often the runs directory is listed for runs that other processes run (the CLI, a battery). */
const SCAN_MS = 5000;
/** At the first scan, how many of the newest runs are read to find those in progress elsewhere. */
const FIRST_SCAN_DEPTH = 100;

/** Who hears of runs that changed: their summaries, newest state, a few at a time. */
export type RunListListener = (views: readonly RunView[]) => void;

/**
 * The changes to the runs list, for the viewer's open list pages: one per server,
 * shared by every page, idle while none is open. This server's runs are pushed by the hub as
 * their events are written (coalesced per `FLUSH_MS`); runs that another process writes to the
 * same runs directory are found by listing it every `SCAN_MS` and re-reading the few in progress.
 */
export class RunListFeed {
  readonly #hub: RunHub;
  readonly #index: Pick<RunIndex, 'view'>;
  readonly #store: Pick<RunLogStore, 'list'>;
  readonly #timing: { readonly flushMs: number; readonly scanMs: number };
  readonly #listeners = new Set<RunListListener>();
  readonly #pending = new Set<string>();
  /** Runs in progress in another process: id → how many events the last update had. */
  readonly #elsewhere = new Map<string, number>();
  /** The run ids of the runs directory at the last scan; null before the first one. */
  #seen: Set<string> | null = null;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;
  #scanTimer: ReturnType<typeof setInterval> | undefined;
  #unwatch: (() => void) | undefined;
  #scanning = false;
  /** Counts starts and stops, so a scan that outlives its feed's stop changes nothing. */
  #generation = 0;

  constructor(
    hub: RunHub,
    index: Pick<RunIndex, 'view'>,
    store: Pick<RunLogStore, 'list'>,
    timing: { readonly flushMs: number; readonly scanMs: number } = { flushMs: FLUSH_MS, scanMs: SCAN_MS },
  ) {
    this.#hub = hub;
    this.#index = index;
    this.#store = store;
    this.#timing = timing;
  }

  /**
   * Sends `listener` the runs that change from now on, starting with those live now (one may
   * have started between the page and its stream). Returns how to stop.
   */
  subscribe(listener: RunListListener): () => void {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) this.#start();
    for (const live of this.#hub.list()) this.#pending.add(live.runId);
    this.#schedule();
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#stop();
    };
  }

  #start(): void {
    this.#unwatch = this.#hub.watch((runId) => {
      this.#pending.add(runId);
      this.#schedule();
    });
    this.#scanTimer = setInterval(() => void this.#scan(), this.#timing.scanMs);
    void this.#scan();
  }

  #stop(): void {
    this.#generation += 1;
    this.#unwatch?.();
    this.#unwatch = undefined;
    clearInterval(this.#scanTimer);
    clearTimeout(this.#flushTimer);
    this.#scanTimer = undefined;
    this.#flushTimer = undefined;
    this.#pending.clear();
    this.#elsewhere.clear();
    this.#seen = null;
  }

  #schedule(): void {
    if (this.#flushTimer !== undefined || this.#pending.size === 0 || this.#listeners.size === 0) return;
    this.#flushTimer = setTimeout(() => void this.#flush(), this.#timing.flushMs);
  }

  async #flush(): Promise<void> {
    const ids = [...this.#pending];
    this.#pending.clear();
    const views: RunView[] = [];
    for (const id of ids) {
      const view = await this.#index.view(id).catch(() => undefined);
      if (view !== undefined) views.push(view);
    }
    this.#flushTimer = undefined;
    this.#send(views);
    this.#schedule();
  }

  #send(views: readonly RunView[]): void {
    if (views.length === 0) return;
    for (const listener of this.#listeners) {
      try {
        listener(views);
      } catch {
        // A page that went away must not stop the others.
      }
    }
  }

  /** New runs in the directory, and the progress of those another process runs. */
  async #scan(): Promise<void> {
    if (this.#scanning) return;
    this.#scanning = true;
    const generation = this.#generation;
    try {
      const ids = await this.#store.list();
      if (generation !== this.#generation) return;
      const first = this.#seen === null;
      const before = this.#seen ?? new Set<string>();
      this.#seen = new Set(ids);
      const candidates = first
        ? [...ids].sort().reverse().slice(0, FIRST_SCAN_DEPTH)
        : [...ids.filter((id) => !before.has(id)), ...this.#elsewhere.keys()];
      const changed: RunView[] = [];
      for (const id of new Set(candidates)) {
        // The hub tells of its own runs as they go.
        if (this.#hub.get(id) !== undefined) {
          this.#elsewhere.delete(id);
          continue;
        }
        const view = await this.#index.view(id).catch(() => undefined);
        if (generation !== this.#generation) return;
        if (view === undefined) continue;
        const known = this.#elsewhere.get(id);
        if (view.status === 'running') this.#elsewhere.set(id, view.events);
        else this.#elsewhere.delete(id);
        // The first scan only learns what the page already shows.
        if (!first && known !== view.events) changed.push(view);
      }
      if (this.#listeners.size > 0) this.#send(changed);
    } catch {
      // The directory could not be listed this time; the next scan tries again.
    } finally {
      this.#scanning = false;
    }
  }
}

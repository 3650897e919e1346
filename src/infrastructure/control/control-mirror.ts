import type { ControlStore, ModelCallRecord } from '../../application/control-ports.ts';
import type { RunObserver } from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { ModelCallTracker } from './model-calls.ts';

/** How the mirror batches, and what it says when the database is gone. */
export interface ControlMirrorOptions {
  /** Told once per outage (and once when there is no store): the run goes on regardless. */
  readonly onDegraded?: (message: string) => void;
  /** A queued event waits at most this long before it is written. */
  readonly flushIntervalMs?: number;
  /** This many queued events are written at once, without waiting for the interval. */
  readonly batchSize?: number;
  /** After a failed write, events are dropped (left for `sync`) this long before trying again. */
  readonly retryAfterMs?: number;
  /**
   * Default bound of `flush()` and `close()`: 2 s for a server; 20 s for the embedded database,
   * whose first write in a process waits for PGlite to start in its worker.
   */
  readonly flushTimeoutMs?: number;
}

/** What the mirror did so far. */
export interface ControlMirrorStats {
  readonly written: number;
  readonly dropped: number;
  readonly degraded: boolean;
}

interface Queued {
  readonly event: RunEvent;
  readonly call: ModelCallRecord | null;
}

const MAX_BATCH = 500;

/**
 * Mirrors runs to the control plane as a `RunObserver`. `onEvent` only queues (the loop never
 * waits on the database); a single writer drains the queue in batches, every
 * `flushIntervalMs`, at `batchSize` events, and at `run_end`. A database that is down or
 * disabled is noted once and costs nothing more: the events are dropped, the runlog still has
 * them, and `fabric control sync` writes them later. The store stays the caller's to close.
 */
export class ControlMirror implements RunObserver {
  readonly #store: ControlStore | null;
  readonly #onDegraded: (message: string) => void;
  readonly #interval: number;
  readonly #batchSize: number;
  readonly #retryAfter: number;
  readonly #flushTimeout: number;
  readonly #tracker = new ModelCallTracker();
  #queue: Queued[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | null = null;
  #migrated: Promise<unknown> | null = null;
  #downUntil = 0;
  #noted = false;
  #closed = false;
  #written = 0;
  #dropped = 0;

  constructor(store: ControlStore | null, options: ControlMirrorOptions = {}) {
    this.#store = store;
    this.#onDegraded = options.onDegraded ?? (() => {});
    this.#interval = options.flushIntervalMs ?? 100;
    this.#batchSize = options.batchSize ?? 50;
    this.#retryAfter = options.retryAfterMs ?? 30_000;
    this.#flushTimeout = options.flushTimeoutMs ?? (store?.kind === 'pglite' ? 20_000 : 2_000);
  }

  onEvent(event: RunEvent): void {
    try {
      // The tracker sees every line, written or not, so the calls it derives stay right.
      const call = this.#tracker.observe(event);
      if (this.#closed || Date.now() < this.#downUntil) {
        this.#dropped += 1;
        return;
      }
      if (this.#store === null) {
        this.#dropped += 1;
        this.#note('control plane disabled (db_off): runs are not mirrored.');
        return;
      }
      this.#queue.push({ event, call });
      if (this.#queue.length >= this.#batchSize || event.kind === 'run_end') this.#kick();
      else this.#arm();
    } catch {
      // An observer must not throw into the loop; the runlog is the record.
    }
  }

  onText(_text: string): void {}

  onToolCallStarted(_name: string): void {}

  get stats(): ControlMirrorStats {
    return { written: this.#written, dropped: this.#dropped, degraded: this.#noted };
  }

  /** Writes what is queued; resolves after that or after `timeoutMs`, never rejects. */
  async flush(timeoutMs = this.#flushTimeout): Promise<void> {
    const drained = (async () => {
      while (this.#queue.length > 0 || this.#writing !== null) {
        this.#kick();
        await this.#writing;
      }
    })();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    try {
      await Promise.race([drained, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Flushes (bounded) and stops mirroring; later events are dropped. */
  async close(timeoutMs = this.#flushTimeout): Promise<void> {
    await this.flush(timeoutMs);
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(): void {
    if (this.#timer !== undefined || this.#writing !== null) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#kick();
    }, this.#interval);
    // Node: a pending flush must not keep a finished CLI alive (Deno's timers are numbers).
    (this.#timer as { unref?: () => void }).unref?.();
  }

  #kick(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#writing !== null || this.#queue.length === 0) return;
    this.#writing = this.#drain().finally(() => {
      this.#writing = null;
      if (this.#queue.length > 0) this.#arm();
    });
  }

  async #drain(): Promise<void> {
    const store = this.#store;
    if (store === null) return;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      try {
        // The embedded database is created on first use, so the schema is ensured here.
        this.#migrated ??= store.migrate();
        await this.#migrated;
        await store.write({
          events: batch.map((item) => item.event),
          modelCalls: batch.flatMap((item) => (item.call === null ? [] : [item.call])),
        });
        this.#written += batch.length;
        this.#noted = false;
      } catch (error) {
        this.#migrated = null;
        this.#dropped += batch.length + this.#queue.length;
        this.#queue = [];
        this.#downUntil = Date.now() + this.#retryAfter;
        this.#note(
          `control plane unavailable (db_off) at ${store.location}: ${errorMessage(error)}. ` +
            'The run goes on; `fabric control sync` writes the missing rows later.',
        );
        return;
      }
    }
  }

  #note(message: string): void {
    if (this.#noted) return;
    this.#noted = true;
    try {
      this.#onDegraded(message);
    } catch {
      // The callback is the caller's; its failure must not reach the loop either.
    }
  }
}

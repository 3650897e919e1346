import type { ControlStore, ModelCallRecord } from '../../application/control/control-ports.ts';
import type { RunObserver } from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { heldByAnotherProcess } from './dir-lock.ts';
import { ModelCallTracker } from './model-calls.ts';

/** How the mirror batches, and how long it trusts a store that failed. */
export interface ControlMirrorOptions {
  /** Told once per run that loses rows (and once when there is no store): the runs go on regardless. */
  readonly onDegraded?: (message: string) => void;
  /** A queued event waits at most this long before it is written (100 ms; embedded 250 ms). */
  readonly flushIntervalMs?: number;
  /** This many queued events are written at once, without waiting for the interval (50; embedded 250). */
  readonly batchSize?: number;
  /**
   * After a failed write, events are dropped (left for backfill and `sync`) for a while before
   * trying again: 250 ms after the first failure, doubling with each failure in a row, at most
   * this long (default 30 s); a write that succeeds starts over.
   */
  readonly retryAfterMs?: number;
  /**
   * A write that has not settled after this long counts as failed: a stalled database must not
   * pile up events. Default 15 s for a server, 120 s for the embedded database.
   */
  readonly writeTimeoutMs?: number;
  /** Events queued beyond this are dropped (left for backfill), so memory stays bounded whatever the store does. */
  readonly maxQueued?: number;
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

/** One run's link to the mirror: who hears about its lost rows, and whether they have. */
interface RunNotice {
  readonly onNotice: (message: string) => void;
  noticed: boolean;
}

interface Queued {
  readonly event: RunEvent;
  readonly call: ModelCallRecord | null;
  readonly notice: RunNotice | null;
}

const MAX_BATCH = 500;
const FIRST_RETRY_MS = 250;

/**
 * Mirrors runs to the control plane (SPEC §7). One mirror serves every run of a process (§10):
 * each run gets an `observer()` whose `onEvent` only queues (the loop never waits on the
 * database); a single writer drains the queue in batches — every `flushIntervalMs`, at
 * `batchSize` events, and at a `run_end` — in one transaction each, so many runs make few, large
 * writes. Whatever the store does (refuses, fails mid-write, stalls), the runs never see it: a
 * failed or stalled write drops the batch, each run that lost rows is told once, nothing is
 * tried for a backoff (250 ms, doubling to `retryAfterMs`), and the runs that lost rows are kept for the backfill (`lossyRuns`)
 * — the runlog still has every line. The store stays the caller's to close.
 */
export class ControlMirror implements RunObserver {
  readonly #store: ControlStore | null;
  readonly #onDegraded: (message: string) => void;
  readonly #interval: number;
  readonly #batchSize: number;
  readonly #writeOnEnd: boolean;
  readonly #retryAfter: number;
  readonly #writeTimeout: number;
  readonly #maxQueued: number;
  readonly #flushTimeout: number;
  readonly #tracker = new ModelCallTracker();
  readonly #lossy = new Set<string>();
  #queue: Queued[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #writing: Promise<void> | null = null;
  #migrated: Promise<unknown> | null = null;
  #downUntil = 0;
  /** Failed writes in a row: the backoff before the next try. */
  #failures = 0;
  #noted = false;
  /** Whether `onDegraded` has heard of the current outage. */
  #notedGlobal = false;
  #lastFailure = 'control plane unavailable (db_off).';
  /** The last failure was the embedded database held by another live process (its holder backfills). */
  #heldElsewhere = false;
  #closed = false;
  #written = 0;
  #dropped = 0;

  constructor(store: ControlStore | null, options: ControlMirrorOptions = {}) {
    this.#store = store;
    this.#onDegraded = options.onDegraded ?? (() => {});
    // The embedded database pays mostly per statement, on this process's cores: fewer, larger
    // batches (measured: a 50-step run 1.5x off with 50-event batches, 1.15-1.25x with these).
    // A server gets rows within 100 ms, for readers that follow runs through it (workers, SSE).
    this.#interval = options.flushIntervalMs ?? (store?.kind === 'pglite' ? 250 : 100);
    this.#batchSize = options.batchSize ?? (store?.kind === 'pglite' ? 250 : 50);
    this.#writeOnEnd = store?.kind !== 'pglite';
    this.#retryAfter = options.retryAfterMs ?? 30_000;
    // The embedded database's first write waits for it to be created and started, which on a
    // loaded machine takes a while; a server that does not answer in 15 s is taken as stalled.
    this.#writeTimeout = options.writeTimeoutMs ?? (store?.kind === 'pglite' ? 120_000 : 15_000);
    this.#maxQueued = options.maxQueued ?? 20_000;
    this.#flushTimeout = options.flushTimeoutMs ?? (store?.kind === 'pglite' ? 20_000 : 2_000);
  }

  /** A run's observer. `onNotice` hears once if this run's rows do not reach the store. */
  observer(onNotice: (message: string) => void = () => {}): RunObserver {
    const notice: RunNotice = { onNotice, noticed: false };
    return {
      onEvent: (event) => this.#accept(event, notice),
      onText() {},
      onToolCallStarted() {},
    };
  }

  onEvent(event: RunEvent): void {
    this.#accept(event, null);
  }

  onText(_text: string): void {}

  onToolCallStarted(_name: string): void {}

  get stats(): ControlMirrorStats {
    return { written: this.#written, dropped: this.#dropped, degraded: this.#noted };
  }

  /** True while the store is being left alone after a failure. */
  get down(): boolean {
    return Date.now() < this.#downUntil;
  }

  /** The runs that lost rows since the last call (for the backfill to write from their runlogs). */
  takeLossyRuns(): string[] {
    const runs = [...this.#lossy];
    this.#lossy.clear();
    return runs;
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
    for (const item of this.#queue) this.#lose(item);
    this.#queue = [];
  }

  #accept(event: RunEvent, notice: RunNotice | null): void {
    try {
      // The tracker sees every line, written or not, so the calls it derives stay right.
      const call = this.#tracker.observe(event);
      const item: Queued = { event, call, notice };
      if (this.#store === null) {
        this.#lose(item);
        this.#note(notice, 'control plane disabled (db_off): runs are not mirrored.');
        return;
      }
      if (this.#closed || this.down || this.#queue.length >= this.#maxQueued) {
        this.#lose(item);
        this.#note(notice, this.#closed ? 'the control plane is closed.' : this.#lastFailure);
        return;
      }
      this.#queue.push(item);
      // A server's rows follow a run's end and its resume at once (readers follow runs through
      // it); the embedded database, which pays per statement on this process's cores, waits for the batch.
      const turn = event.kind === 'run_end' || event.kind === 'run_resumed';
      if (this.#queue.length >= this.#batchSize || (turn && this.#writeOnEnd)) this.#kick();
      else this.#arm();
    } catch {
      // An observer must not throw into the loop; the runlog is the record.
    }
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
        await this.#bounded(async () => {
          // Migrations run once per store (the embedded database is created on first use).
          this.#migrated ??= store.migrate();
          await this.#migrated;
          await store.write({
            events: batch.map((item) => item.event),
            modelCalls: batch.flatMap((item) => (item.call === null ? [] : [item.call])),
          });
        });
        this.#written += batch.length;
        this.#failures = 0;
        this.#notedGlobal = false;
        this.#heldElsewhere = false;
      } catch (error) {
        this.#migrated = null;
        const lost = [...batch, ...this.#queue];
        this.#queue = [];
        this.#failures += 1;
        // Back soon after a blink, rarely against a database that stays away.
        const backoff = FIRST_RETRY_MS * 2 ** Math.min(this.#failures - 1, 16);
        this.#downUntil = Date.now() + Math.min(this.#retryAfter, backoff);
        // Another live process holds the embedded database and writes these rows in from the
        // runlog itself: nothing is lost and nothing needs doing, so nothing is said.
        this.#heldElsewhere = heldByAnotherProcess(error);
        this.#lastFailure =
          `control plane unavailable (db_off) at ${store.location}: ${errorMessage(error).replace(/\.+$/, '')}. ` +
          'The run goes on; its rows are written from the runlog once the database is back (`fabric control sync`).';
        for (const item of lost) {
          this.#lose(item);
          this.#note(item.notice, this.#lastFailure);
        }
        return;
      }
    }
  }

  /** Runs a write, failing it when it has not settled in time (the store may hang on a dead socket). */
  #bounded(work: () => Promise<void>): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer in ${Math.round(this.#writeTimeout / 1000)} s`)),
        this.#writeTimeout,
      );
    });
    const write = work();
    // The write may still settle after the timeout; its outcome no longer matters.
    write.catch(() => {});
    return Promise.race([write, timeout]).finally(() => clearTimeout(timer));
  }

  #lose(item: Queued): void {
    this.#dropped += 1;
    this.#lossy.add(item.event.run_id);
  }

  /** Tells the run once, and the process-wide `onDegraded` once per outage. */
  #note(notice: RunNotice | null, message: string): void {
    this.#noted = true;
    if (this.#heldElsewhere) return;
    if (!this.#notedGlobal) {
      this.#notedGlobal = true;
      this.#tell(this.#onDegraded, message);
    }
    if (notice !== null && !notice.noticed) {
      notice.noticed = true;
      this.#tell(notice.onNotice, message);
    }
  }

  #tell(listener: (message: string) => void, message: string): void {
    try {
      listener(message);
    } catch {
      // The callback is the caller's; its failure must not reach the loop either.
    }
  }
}

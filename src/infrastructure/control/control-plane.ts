import { readdir, stat } from 'node:fs/promises';
import type { ControlStore } from '../../application/control/control-ports.ts';
import type { RunLogContents, RunLogStore, RunObserver } from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { FileRunLogStore } from '../runlog/file-run-log-store.ts';
import { ControlMirror, type ControlMirrorOptions } from './control-mirror.ts';
import { heldByAnotherProcess } from './dir-lock.ts';
import { syncRunlogs } from './sync.ts';

const UNFINISHED_CHECK_MS = 60_000;

/** How a process's control plane behaves besides its store. */
export interface ControlPlaneOptions {
  /**
   * Write into the store the runlogs it did not see: at open and then every `backfillIntervalMs`.
   * The embedded database's holder does (SPEC §7: other processes' runs reach it that way); a
   * one-shot command need not. Runs this process lost rows of are written back in any case.
   */
  readonly backfillOthers: boolean;
  /** How often the backfill looks again; default 5 s. */
  readonly backfillIntervalMs?: number;
  /** Told about trouble the process should log once (an outage), never per event. */
  readonly onDegraded?: (message: string) => void;
  /** Batching and fault bounds of the mirror (tests shorten them). */
  readonly mirror?: Omit<ControlMirrorOptions, 'onDegraded'>;
}

/** What a backfill pass did. */
export interface BackfillReport {
  readonly runs: number;
  readonly events: number;
}

/**
 * The control plane of one process (SPEC §7, §10): one store — one embedded database or one
 * Postgres pool — one mirror that every run of the process writes through, and a backfill that
 * writes from the runlogs what the mirror could not (an outage, or runs of other processes while
 * this one holds the embedded database). Opened once by the composition root, closed with it.
 */
export class ControlPlane {
  readonly store: ControlStore;
  readonly mirror: ControlMirror;
  readonly #runLogs: FileRunLogStore;
  readonly #options: ControlPlaneOptions;
  /**
   * This process's runs (id → when it ended; Infinity while it runs): the mirror has them, and
   * the backfill never reads them as other processes' runs (what the mirror lost of them is in
   * `#owed`). Kept only until their runlogs are older than the next pass looks at.
   */
  readonly #mine = new Map<string, number>();
  /** Runs whose rows went missing and must be written from their runlog once they end. */
  readonly #owed = new Set<string>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #pass: Promise<BackfillReport> | null = null;
  /** Runlogs changed after this (ms since epoch) are looked at by the next pass; 0: all of them. */
  #scannedUpTo = 0;
  #nextUnfinishedCheck = 0;
  #backfillFailing = false;
  #closed = false;

  constructor(store: ControlStore, runLogs: FileRunLogStore, options: ControlPlaneOptions) {
    this.store = store;
    this.#runLogs = runLogs;
    this.#options = options;
    this.mirror = new ControlMirror(store, {
      ...options.mirror,
      ...(options.onDegraded === undefined ? {} : { onDegraded: options.onDegraded }),
    });
  }

  /** Starts the backfill: one pass now, then one every interval (never keeping the process alive). */
  start(): void {
    if (this.#timer !== undefined || this.#closed) return;
    void this.backfill();
    this.#timer = setInterval(() => void this.backfill(), this.#options.backfillIntervalMs ?? 5_000);
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** A run's observer; `onNotice` hears once if the run's rows do not reach the store. */
  observe(runId: string, onNotice: (message: string) => void): RunObserver {
    this.#mine.set(runId, Number.POSITIVE_INFINITY);
    const observer = this.mirror.observer(onNotice);
    return {
      onEvent: (event) => {
        observer.onEvent(event);
        if (event.kind === 'run_end') this.#ended(event.run_id);
      },
      onText() {},
      onToolCallStarted() {},
    };
  }

  /** Marks a run of this process ended, also one whose `run_end` never reached the observer. */
  release(runId: string): void {
    this.#ended(runId);
  }

  #ended(runId: string): void {
    if (this.#mine.get(runId) === Number.POSITIVE_INFINITY) this.#mine.set(runId, Date.now());
  }

  #running(runId: string): boolean {
    return this.#mine.get(runId) === Number.POSITIVE_INFINITY;
  }

  /**
   * One backfill pass (passes never overlap): the runs the mirror dropped rows of, and — for the
   * embedded database's holder — every runlog changed since the last pass, whoever wrote it.
   * Never throws: a store that is down is tried again on the next pass.
   */
  backfill(): Promise<BackfillReport> {
    this.#pass ??= this.#backfill().finally(() => {
      this.#pass = null;
    });
    return this.#pass;
  }

  async #backfill(): Promise<BackfillReport> {
    for (const runId of this.mirror.takeLossyRuns()) this.#owed.add(runId);
    if (this.#closed || this.mirror.down) return { runs: 0, events: 0 };
    const passStarted = Date.now();
    // A run still in progress is written back too (what it wrote so far), so that followers
    // of its events see them again within seconds; rows it loses later are the mirror's to
    // report again (takeLossyRuns), so one pass pays off what is owed.
    const wanted = new Set(this.#owed);
    // Runs of this process that ended before what this pass looks at need remembering no more.
    for (const [runId, ended] of this.#mine) if (ended < this.#scannedUpTo - 2_000) this.#mine.delete(runId);
    if (this.#options.backfillOthers) {
      for (const runId of await this.#changedSince(this.#scannedUpTo)) wanted.add(runId);
      for (const runId of await this.#unfinished(passStarted)) wanted.add(runId);
    }
    if (wanted.size === 0) {
      if (this.#options.backfillOthers) this.#scannedUpTo = passStarted;
      return { runs: 0, events: 0 };
    }
    try {
      const report = await syncRunlogs(this.store, this.#only(wanted));
      for (const runId of wanted) this.#owed.delete(runId);
      // A run still being written by another process is looked at again on the next pass.
      if (this.#options.backfillOthers) this.#scannedUpTo = passStarted - 1_000;
      this.#backfillFailing = false;
      return { runs: report.runsUpdated, events: report.eventsInserted };
    } catch (error) {
      // The embedded database held by another live process: the holder backfills (SPEC §7),
      // so this is not a failure to report.
      if (heldByAnotherProcess(error)) return { runs: 0, events: 0 };
      // Said once until a pass succeeds again.
      if (!this.#backfillFailing) {
        this.#backfillFailing = true;
        this.#options.onDegraded?.(
          `control plane backfill from the runlogs failed (${errorMessage(error).replace(/\.+$/, '')}); it is tried again every few seconds.`,
        );
      }
      return { runs: 0, events: 0 };
    }
  }

  /**
   * Now and then (every minute), the runs the store still has as `running` that are not in
   * progress here: a run whose process died has a runlog that no longer changes, and sync marks
   * it `interrupted` (SPEC §6) once it reads it.
   */
  async #unfinished(now: number): Promise<string[]> {
    if (now < this.#nextUnfinishedCheck) return [];
    this.#nextUnfinishedCheck = now + UNFINISHED_CHECK_MS;
    try {
      const held = await this.store.mirroredRuns();
      return [...held.values()]
        .filter((run) => run.status === 'running' && !this.#running(run.runId))
        .map((run) => run.runId);
    } catch {
      return [];
    }
  }

  /**
   * Other processes' runs whose runlog changed at or after `since` (ms; 0: all): one directory
   * read and one `stat` a run.
   */
  async #changedSince(since: number): Promise<string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.#runLogs.runsDir);
    } catch {
      return [];
    }
    const changed: string[] = [];
    for (const runId of entries) {
      if (runId.startsWith('.') || this.#mine.has(runId)) continue;
      const modified = await stat(this.#runLogs.pathOf(runId)).then(
        (info) => (info.isFile() ? info.mtimeMs : -1),
        () => -1,
      );
      if (modified >= since) changed.push(runId);
    }
    return changed;
  }

  /** The runlog store seen through a filter, and cut short when the plane closes mid-pass. */
  #only(runIds: ReadonlySet<string>): RunLogStore {
    const runLogs = this.#runLogs;
    return {
      create: (runId) => runLogs.create(runId),
      list: async () => [...runIds],
      read: (ref): Promise<RunLogContents> => {
        if (this.#closed) return Promise.reject(new Error('the control plane is closing'));
        return runLogs.read(ref);
      },
    };
  }

  /** Writes what is queued (bounded), stops the backfill, and closes the store. Never throws. */
  async close(timeoutMs?: number): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.mirror.close(timeoutMs);
    this.#closed = true;
    await this.#pass?.catch(() => {});
    await this.store.close().catch(() => {});
  }
}

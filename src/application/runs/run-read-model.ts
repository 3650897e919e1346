/**
 * The read model of runs: how `fabric runs`, `GET /v1/runs`, the viewer's list and
 * MCP's `get_run` list and show runs, from the runs live in this process, the runlogs, the
 * control plane (where a `queue: postgres` worker's runs and the queued ones are) and process
 * liveness. Each reader wires the sources it has; the rules are the same for all.
 */
import { FabricError, errorMessage } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { ControlReader, ControlRunRow } from '../control/control-ports.ts';
import type { RunLogStore } from '../ports.ts';
import type { LivenessCheck } from './liveness-ports.ts';
import {
  type RunRecord,
  type RunRecordStatus,
  mergeRecords,
  recordFromControl,
  recordFromEvents,
} from './run-record.ts';

/** The runlogs: read by id, prefix or path, listed newest first, located by id. */
export interface RunLogReader extends Pick<RunLogStore, 'read' | 'list'> {
  /** Where the runlog of this run is (or will be). */
  pathOf(runId: string): string;
}

/** The runs in progress in this process, with the events they have written so far. */
export interface LiveRuns {
  liveRunIds(): readonly string[];
  liveEvents(runId: string): readonly RunEvent[] | undefined;
}

/** One run in the control plane: a worker's, a queued one, another host's. */
export type ControlRunLookup = Pick<ControlReader, 'getRun' | 'runEvents' | 'leaseHeld'>;

/** The control plane's newest runs, for listings that merge them with the runlogs. */
export type ControlRunListing = ControlRunLookup & Pick<ControlReader, 'listRuns'>;

/** A control plane as a reader opens it; null when it is off. Throws when it cannot be reached. */
export type ControlSource<T> = () => Promise<T | null>;

/** What the read model reads. Without `control`, it is the runlogs and the live runs alone. */
export interface RunReadModelDeps {
  readonly runLogs: RunLogReader;
  readonly live?: LiveRuns | undefined;
  /** Asked by `show` for a run with no runlog here. */
  readonly control?: ControlSource<ControlRunLookup> | undefined;
  /** Asked by `list` for its newest runs, merged with the runlogs (`fabric runs`). */
  readonly controlListing?: ControlSource<ControlRunListing> | undefined;
  readonly check: () => LivenessCheck;
  /**
   * A control row still `running` stays running until its `run_end` is mirrored or the reaper
   * marks it (see `recordFromControl`), instead of being judged by its owner's liveness.
   */
  readonly controlRowDecides?: boolean | undefined;
  /** How many ended runs' records to keep, so paging does not re-read their runlogs; 0: none. */
  readonly cacheEnded?: number | undefined;
}

/** What a listing asks for. */
export interface RunFilter {
  readonly status?: RunRecordStatus | string | undefined;
  readonly specialist?: string | undefined;
  /** Only runs older than this id (the last one of the previous page). */
  readonly before?: string | undefined;
  readonly limit: number;
}

/** One page of runs, newest id first, and whether older ones match too. */
export interface RunPage {
  readonly runs: readonly RunRecord[];
  readonly more: boolean;
  /** Why the control plane was left out of this page, when it is on and could not be read. */
  readonly controlError?: unknown;
}

/** Lists and shows runs. */
export class RunReadModel {
  readonly #deps: RunReadModelDeps;
  readonly #ended = new Map<string, RunRecord>();

  constructor(deps: RunReadModelDeps) {
    this.#deps = deps;
  }

  /**
   * The runs matching `filter`, newest id first (run ids sort by the second they were made in):
   * the live runs, the runlogs and, with `controlListing`, the control plane's newest rows, each
   * listed once. Unreadable runlogs are left out; `show` explains them.
   */
  async list(filter: RunFilter): Promise<RunPage> {
    const rows = new Map<string, ControlRunRow>();
    let control: ControlRunListing | null = null;
    let controlError: unknown;
    try {
      const source = (await this.#deps.controlListing?.()) ?? null;
      if (source !== null) {
        for (const row of await source.listRuns({ limit: filter.limit })) rows.set(row.id, row);
        control = source;
      }
    } catch (error) {
      controlError = error;
      rows.clear();
    }
    const live = this.#deps.live?.liveRunIds() ?? [];
    const ids = [...new Set([...live, ...(await this.#deps.runLogs.list()), ...rows.keys()])]
      .sort()
      .reverse()
      .filter((id) => filter.before === undefined || id < filter.before);
    const runs: RunRecord[] = [];
    const seen = new Set<string>();
    for (const id of ids) {
      const record = await this.#listed(id, rows.get(id), control);
      // The id inside the lines is the run's key, whatever its directory is called.
      if (record === null || seen.has(record.run_id)) continue;
      seen.add(record.run_id);
      if (filter.status !== undefined && record.status !== filter.status) continue;
      if (filter.specialist !== undefined && record.specialist !== filter.specialist) continue;
      if (runs.length === filter.limit) return { runs, more: true, ...withError(controlError) };
      runs.push(record);
    }
    return { runs, more: false, ...withError(controlError) };
  }

  /**
   * One run: live in this process, else from its runlog (by id, unique prefix or path), else
   * from the control plane. Throws `run_not_found` / `runlog_corrupt` as the runlog store does.
   */
  async show(ref: string): Promise<RunRecord> {
    const cached = this.#ended.get(ref);
    if (cached !== undefined) return cached;
    return (await this.read(ref)).record;
  }

  /** One run's record and the events it was made from. */
  async read(ref: string): Promise<{ record: RunRecord; events: readonly RunEvent[] }> {
    const { runLogs, live, check } = this.#deps;
    const liveEvents = live?.liveEvents(ref);
    if (liveEvents !== undefined) {
      const events = [...liveEvents];
      const where = { runlog: runLogs.pathOf(ref), torn: false, live: true };
      return { record: recordFromEvents(ref, events, where, check()), events };
    }
    try {
      const contents = await runLogs.read(ref);
      const where = { runlog: contents.location, torn: contents.torn, live: false };
      const record = recordFromEvents(contents.runId, contents.events, where, check());
      this.#remember(record);
      return { record, events: contents.events };
    } catch (error) {
      if (!(error instanceof FabricError) || error.code !== 'run_not_found') throw error;
      let found: { record: RunRecord; events: readonly RunEvent[] } | null;
      try {
        found = await this.#fromControl(ref);
      } catch (unreachable) {
        // The store is down or held by another process: the runlog's answer stands, and says so.
        throw new FabricError(
          'run_not_found',
          `${error.message} (The control plane could not be asked: ${errorMessage(unreachable)}.)`,
          { cause: unreachable },
        );
      }
      if (found === null) throw error;
      return found;
    }
  }

  async #fromControl(id: string): Promise<{ record: RunRecord; events: readonly RunEvent[] } | null> {
    const control = await this.#deps.control?.();
    if (control === undefined || control === null) return null;
    const row = await control.getRun(id);
    if (row === null) return null;
    const events = await control.runEvents(id);
    return {
      record: recordFromControl(row, events, this.#deps.check(), this.#deps.controlRowDecides),
      events,
    };
  }

  async #listed(
    id: string,
    row: ControlRunRow | undefined,
    control: ControlRunListing | null,
  ): Promise<RunRecord | null> {
    const cached = this.#ended.get(id);
    if (cached !== undefined) return cached;
    if (this.#deps.live?.liveEvents(id) !== undefined) return (await this.read(id)).record;
    try {
      const contents = await this.#deps.runLogs.read(id);
      const where = { runlog: contents.location, torn: contents.torn, live: false };
      const record = recordFromEvents(contents.runId, contents.events, where, this.#deps.check());
      this.#remember(record);
      return mergeRecords(record, row ?? null);
    } catch {
      if (row === undefined || control === null) return null;
      const events = await control.runEvents(id).catch(() => []);
      return recordFromControl(row, events, this.#deps.check(), this.#deps.controlRowDecides);
    }
  }

  /** A run that has ended never changes: its record is kept (the oldest kept goes first). */
  #remember(record: RunRecord): void {
    const most = this.#deps.cacheEnded ?? 0;
    if (most === 0 || record.ended_at === null || record.source !== 'runlog') return;
    if (this.#ended.size >= most) {
      const oldest = this.#ended.keys().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    this.#ended.set(record.run_id, record);
  }
}

function withError(error: unknown): { controlError?: unknown } {
  return error === undefined ? {} : { controlError: error };
}

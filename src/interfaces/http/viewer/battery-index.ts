import type { BatteryPlan, BatteryState, CellResult } from '../../../application/battery/battery-types.ts';
import { cellId } from '../../../application/battery/battery-types.ts';
import { BatteryStateFiles } from '../../../infrastructure/battery/battery-state-file.ts';
import type { BatteryHub } from '../battery-hub.ts';

/** A battery as its pages show it. */
export interface BatteryRecord {
  readonly plan: BatteryPlan;
  readonly status: BatteryState['status'];
  /** Every cell done, in the order they ended. */
  readonly cells: readonly CellResult[];
  /** The cells running now: known for a battery this server runs, else none. */
  readonly started: ReadonlySet<string>;
  /** When its state file was last written; null for a battery this server has not saved yet. */
  readonly updatedAt: string | null;
}

/**
 * The batteries of this runs directory (SPEC §12): the ones this server runs from its hub (their
 * cells the moment they end), every other one from its state file, so batteries run by
 * `fabric battery` elsewhere show too, and update as their files are rewritten.
 */
export class BatteryIndex {
  readonly #states: BatteryStateFiles;
  readonly #hub: BatteryHub | undefined;

  constructor(runsDir: string, hub: BatteryHub | undefined) {
    this.#states = new BatteryStateFiles(runsDir);
    this.#hub = hub;
  }

  /** A battery; `run_not_found` when there is none, `runlog_corrupt` when its file is unreadable. */
  async read(id: string): Promise<BatteryRecord> {
    const live = this.#hub?.get(id);
    if (live === undefined) {
      const state = await this.#states.read(id);
      return {
        plan: state.plan,
        status: state.status,
        cells: state.cells,
        started: new Set(),
        updatedAt: state.updated_at,
      };
    }
    const ended = new Set<string>();
    const started = new Set<string>();
    for (const event of live.events) {
      if (event.kind === 'cell_start') started.add(cellId(event));
      if (event.kind === 'cell_end') ended.add(cellId(event.cell));
    }
    for (const id of ended) started.delete(id);
    const updatedAt = await this.#states.read(id).then(
      (state) => state.updated_at,
      () => null,
    );
    return {
      plan: live.session.plan,
      status: this.#hub?.running(id) ? 'running' : live.session.status,
      cells: live.session.cells(),
      started,
      updatedAt,
    };
  }

  /** The newest batteries first, at most `limit`; an unreadable state file is left out. */
  async list(limit: number): Promise<BatteryRecord[]> {
    const ids = new Set([...(this.#hub?.list() ?? []).map((live) => live.id), ...(await this.#states.ids())]);
    const records: BatteryRecord[] = [];
    for (const id of [...ids].sort().reverse()) {
      if (records.length >= limit) break;
      const record = await this.read(id).catch(() => undefined);
      if (record !== undefined) records.push(record);
    }
    return records;
  }
}

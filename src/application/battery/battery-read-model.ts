/**
 * The read model of batteries (SPEC §12), the one way the HTTP API, the viewer and the
 * CLI list and show them: a battery this process runs as its session has it (its cells the moment
 * they end), every other one from its kept state, so batteries run by `fabric battery` elsewhere
 * show too, and update as their states are rewritten.
 */
import { type BatterySummary, summarizeBattery } from './battery-summary.ts';
import type { BatteryPlan, BatteryState, CellResult } from './battery-types.ts';
import type { BatteryStates } from './session-ports.ts';

/** `running` until the battery ends; then `done`, or `interrupted` (resumable). */
export type BatteryStatus = BatteryState['status'];

/** A battery this process runs, or ran lately (a server's hub). */
export interface LiveBatteryView {
  readonly plan: BatteryPlan;
  /** Whether it still runs here. */
  readonly running: boolean;
  /** `running` while it runs, then how it ended. */
  readonly status: BatteryStatus;
  /** Every cell done, in the order they ended. */
  readonly cells: readonly CellResult[];
  /** The ids (`cellId`) of the cells running now. */
  readonly started: ReadonlySet<string>;
}

/** The batteries this process runs: the read model prefers them to their kept state. */
export interface LiveBatteries {
  live(id: string): LiveBatteryView | undefined;
  /** Their ids, in any order. */
  liveIds(): readonly string[];
}

/** A battery as it is listed and shown. */
export interface BatteryRecord {
  readonly plan: BatteryPlan;
  readonly status: BatteryStatus;
  /** Every cell done, in the order they ended. */
  readonly cells: readonly CellResult[];
  /** The cells running now: known for a battery this process runs, else none. */
  readonly started: ReadonlySet<string>;
  /** When its state was last written; null for a battery not saved yet. */
  readonly updatedAt: string | null;
  /** Whether it runs in this process now. */
  readonly live: boolean;
}

/** A battery's matrix in SPEC §12's `--json` shape; its cells not done say why. */
export function batterySummaryOf(
  plan: BatteryPlan,
  cells: readonly CellResult[],
  status: BatteryStatus,
): BatterySummary {
  const reason =
    status === 'interrupted'
      ? `interrupted before it ran; \`fabric battery --resume ${plan.id}\` runs it`
      : 'not run yet';
  return summarizeBattery(plan, cells, reason);
}

/** A battery as `GET /v1/batteries/:id` shows it: the `--json` shape, plus where it stands. */
export function batteryView(record: BatteryRecord) {
  const { plan } = record;
  return {
    ...batterySummaryOf(plan, record.cells, record.status),
    status: record.status,
    specialist: plan.specialist,
    cells_done: record.cells.length,
    cells_total: plan.tasks.length * plan.models.length * plan.repeat,
    live: record.live,
  };
}

export class BatteryReadModel {
  readonly #states: Pick<BatteryStates, 'read' | 'ids'>;
  readonly #live: LiveBatteries | undefined;

  constructor(states: Pick<BatteryStates, 'read' | 'ids'>, live?: LiveBatteries) {
    this.#states = states;
    this.#live = live;
  }

  /**
   * A battery: live here, else from its kept state — `run_not_found` when there is none,
   * `usage` for a malformed id, `runlog_corrupt` when its state is unreadable.
   */
  async read(id: string): Promise<BatteryRecord> {
    const live = this.#live?.live(id);
    if (live === undefined) {
      const state = await this.#states.read(id);
      return {
        plan: state.plan,
        status: state.status,
        cells: state.cells,
        started: new Set(),
        updatedAt: state.updated_at,
        live: false,
      };
    }
    const updatedAt = await this.#states.read(id).then(
      (state) => state.updated_at,
      () => null,
    );
    return {
      plan: live.plan,
      status: live.status,
      cells: live.cells,
      started: live.started,
      updatedAt,
      live: live.running,
    };
  }

  /** The newest batteries first, at most `limit`; one whose state is unreadable is left out. */
  async list(limit: number): Promise<BatteryRecord[]> {
    const ids = new Set([...(this.#live?.liveIds() ?? []), ...(await this.#states.ids())]);
    const records: BatteryRecord[] = [];
    for (const id of [...ids].sort().reverse()) {
      if (records.length >= limit) break;
      const record = await this.read(id).catch(() => undefined);
      if (record !== undefined) records.push(record);
    }
    return records;
  }
}

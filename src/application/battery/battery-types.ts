/**
 * What a battery is made of (SPEC §12): a plan of cells (task × model × repeat) and each cell's
 * result. Plain data: the state file, the control plane, `--json` and the report all read it.
 */
import type { BatteryExpect } from '../../config/battery-file.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import type { RunFacts } from './run-facts.ts';

/** One task of a battery, with its checks. */
export interface BatteryTaskSpec {
  readonly id: string;
  readonly task: string;
  readonly expect: BatteryExpect;
}

/** What a battery runs: every task with every model, `repeat` times. */
export interface BatteryPlan {
  readonly id: string;
  readonly name: string;
  readonly specialist: string;
  /** The workspace each cell gets a fresh copy of; undefined for a specialist that needs none. */
  readonly workspace: string | undefined;
  readonly models: readonly string[];
  readonly repeat: number;
  readonly maxSteps: number | undefined;
  readonly tasks: readonly BatteryTaskSpec[];
}

/** A cell's coordinates; `repeat` counts from 1. */
export interface CellKey {
  readonly task: string;
  readonly model: string;
  readonly repeat: number;
}

/** How one check of a cell went. `skipped`: not run, because the run itself did not end as expected. */
export interface CheckOutcome {
  /** `status`, `command: cargo test`, `files_contain: src/region.rs`. */
  readonly check: string;
  readonly outcome: 'passed' | 'failed' | 'skipped';
  readonly message: string;
}

/** A cell's status: the run's, or `not_run` when no run could start (a missing model, ...). */
export type CellStatus = RunStatus | 'not_run';

/** A cell, done: SPEC §12's `--json` cell, plus each check's outcome. */
export interface CellResult extends CellKey {
  readonly status: CellStatus;
  readonly passed: boolean;
  /** The first check that failed (`run` when no run started); null when the cell passed. */
  readonly failed_check: string | null;
  /** Why the cell could not run, or why its run or check failed. */
  readonly error: string | null;
  readonly run_id: string | null;
  readonly steps: number;
  readonly tokens: number;
  /** From the run's start to the end of its checks. */
  readonly seconds: number;
  readonly checks: readonly CheckOutcome[];
  /**
   * The cell failed for its infrastructure (a server down, a model missing or failing to load, a
   * cut stream after retries), not its model: never counted against the model, and run again by
   * `--resume` (SPEC §12.1). Absent in states written before it was kept: false.
   */
  readonly infrastructure?: boolean;
  /** How many times the cell was tried in its last session (more than 1 after infrastructure failures). */
  readonly attempts?: number;
  /** What its run's runlog says of how the model worked: calls, reasoning, window, profile. */
  readonly facts?: RunFacts;
  /** When the cell started (its model check, then its run) and ended its checks (ISO 8601). */
  readonly started_at: string;
  readonly ended_at: string;
}

/** The identity of a cell as one string: the key of maps and of the state file. */
export function cellId(cell: CellKey): string {
  return `${cell.task} × ${cell.model} #${cell.repeat}`;
}

/**
 * Every cell of a plan in the order they are shown (task after task, each with every model);
 * they run model after model (`CellSchedule`).
 */
export function planCells(plan: BatteryPlan): CellKey[] {
  const cells: CellKey[] = [];
  for (let repeat = 1; repeat <= plan.repeat; repeat++) {
    for (const task of plan.tasks) {
      for (const model of plan.models) cells.push({ task: task.id, model, repeat });
    }
  }
  return cells;
}

/** A battery id that sorts by start time: `bat-20261122T055512Z-3f9a1c`. */
export function newBatteryId(now: Date): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `bat-${stamp}-${crypto.randomUUID().replace(/-/g, '').slice(0, 6)}`;
}

/** The battery's own record, readable without the control plane (`--resume` starts from it). */
export interface BatteryState {
  readonly version: 1;
  readonly plan: BatteryPlan;
  /** The battery file it came from. */
  readonly file: string;
  readonly status: 'running' | 'interrupted' | 'done';
  readonly created_at: string;
  readonly updated_at: string;
  /** Every cell done, in the order they ended. */
  readonly cells: readonly CellResult[];
}

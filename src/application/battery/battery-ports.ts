/**
 * The ports a battery needs. The runner decides what runs and how many cells at once; these
 * adapters do the rest — it never sees a server URL or a file system (SPEC §2, §12).
 */
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunResult } from '../../domain/run-result.ts';
import type { CellKey, CellResult, CheckOutcome } from './battery-types.ts';

/** A cell's own copy of the battery's workspace. */
export interface CellWorkspace {
  readonly path: string;
  /** Removes the copy (its edits are in the runlog, as diffs). Never throws. */
  dispose(): Promise<void>;
}

/** Makes each cell's fresh copy of the workspace; the original is never written. */
export interface CellWorkspaces {
  prepare(cell: CellKey, signal: AbortSignal): Promise<CellWorkspace>;
}

/** One cell's run: an ordinary run through the fabric. */
export interface CellRunRequest {
  readonly task: string;
  readonly model: string;
  readonly workspace: string | undefined;
  readonly maxSteps: number | undefined;
  /** Recorded in the run's `run_start`, so a run tells which battery and cell it was. */
  readonly tags: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

/**
 * Runs cells and says whether a model can be used. `run` throws a `FabricError` when the run
 * cannot start (no such model, no backend).
 */
export interface CellRunner {
  /**
   * Why `model` cannot run a cell (known to lack tools, an embedding model: the model's own
   * failing), or null when it can. Throws when the model is missing or no backend answers: the
   * infrastructure's failing (SPEC §12.1). Asked before every cell, from what the backends have
   * now: models are loaded and unloaded as a battery goes (SPEC §12).
   */
  unusable(model: string, signal: AbortSignal): Promise<string | null>;
  run(request: CellRunRequest): Promise<RunResult>;
  /**
   * A run's events, read back from its runlog (`RunResult.runlog`): what the checks and the
   * per-model figures read (SPEC §12.1). Absent: those checks are skipped, the figures empty.
   */
  events?(runlog: string): Promise<readonly RunEvent[]>;
  /** The battery is done with `model`: unload it where this process loaded it. Never throws. */
  release?(model: string): Promise<void>;
}

/** Runs a cell's `expect` checks in its workspace. */
export interface ExpectChecks {
  /** The command through the specialist's sandbox and allowlist; passes when it exits 0. */
  command(workspace: string, command: string, signal: AbortSignal): Promise<CheckOutcome>;
  /** Passes when the workspace file exists and contains `text`. */
  fileContains(workspace: string, path: string, text: string): Promise<CheckOutcome>;
}

/** Where a battery's progress is kept: every finished cell, at once (the battery may be killed next). */
export interface BatteryRecorder {
  cellEnded(result: CellResult): Promise<void>;
}

/** A battery's row in the control plane (`control.batteries`). */
export interface BatteryRow {
  readonly id: string;
  readonly name: string;
  readonly specialist: string;
  /** The battery file it came from. */
  readonly file: string;
  readonly models: readonly string[];
  readonly started_at: string;
  readonly ended_at: string | null;
  readonly status: 'running' | 'interrupted' | 'done';
}

/**
 * The control plane's `control.batteries` and `control.battery_cells`, written best-effort as
 * cells end: a database that is off never stops a battery (its state file is the record).
 */
export interface BatterySink {
  recordBattery(row: BatteryRow): Promise<void>;
  recordBatteryCell(batteryId: string, cell: CellResult): Promise<void>;
}

/** Whether a control store also keeps batteries (an optional capability of the store). */
export function isBatterySink(store: unknown): store is BatterySink {
  const sink = store as Partial<BatterySink> | null;
  return typeof sink?.recordBattery === 'function' && typeof sink.recordBatteryCell === 'function';
}

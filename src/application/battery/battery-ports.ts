/**
 * The ports a battery needs. The runner decides what runs and how many cells at once; these
 * adapters do the rest — it never sees a server URL or a file system (SPEC §2, §12).
 */
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
   * Why `model` cannot run a cell (missing, known to lack tools), or null when it can. Asked
   * before every cell, from what the backends have now: models are loaded and unloaded as a
   * battery goes (SPEC §12).
   */
  unusable(model: string, signal: AbortSignal): Promise<string | null>;
  run(request: CellRunRequest): Promise<RunResult>;
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

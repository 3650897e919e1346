/** A battery's result in SPEC §12's `--json` shape: every cell, and per model its scores. */
import type { BatteryPlan, CellResult } from './battery-types.ts';
import { cellId, planCells } from './battery-types.ts';
import { type RepeatScores, repeatScores } from './battery-stats.ts';
import { type ModelFacts, modelFacts } from './model-facts.ts';

/**
 * A cell as `--json` prints it: a `CellResult` without its checks and times; `infrastructure`
 * true when its infrastructure failed it (not counted against the model).
 */
export type CellSummary = {
  readonly infrastructure: boolean;
  /** The window its run worked in (SPEC §17), when known. */
  readonly window_tokens: number | null;
} & Pick<
  CellResult,
  | 'task'
  | 'model'
  | 'repeat'
  | 'status'
  | 'passed'
  | 'failed_check'
  | 'error'
  | 'run_id'
  | 'steps'
  | 'tokens'
  | 'seconds'
>;

/**
 * A model's scores: medians over its cells that ran (null when none did); over repeats
 * (SPEC §12.1), pass@1, pass^k, flip rate and the 95% Wilson interval of its cells done.
 */
export interface ModelSummary extends RepeatScores, ModelFacts {
  readonly model: string;
  readonly passed: number;
  /** The cells that count against the model: done, and not failed by their infrastructure. */
  readonly total: number;
  /** The cells its infrastructure failed (a server down, the model missing or not loading). */
  readonly infrastructure_failures: number;
  /** Passed over counted cells; null when no cell counts (0 of 0 is no rate), shown as `–`. */
  readonly pass_rate: number | null;
  readonly median_steps: number | null;
  readonly median_seconds: number | null;
  readonly tokens: number;
}

export interface BatterySummary {
  readonly id: string;
  readonly name: string;
  readonly cells: readonly CellSummary[];
  readonly models: readonly ModelSummary[];
}

/**
 * Summarizes a battery. Every cell of the plan is listed; one not done yet is `not_run` with
 * the reason, so an interrupted battery's JSON says what is left.
 */
export function summarizeBattery(
  plan: BatteryPlan,
  results: readonly CellResult[],
  notDoneReason = 'not run yet',
): BatterySummary {
  const byId = new Map(results.map((result) => [cellId(result), result]));
  const cells = planCells(plan).map((cell): CellSummary => {
    const result = byId.get(cellId(cell));
    if (result === undefined) {
      return {
        ...cell,
        status: 'not_run',
        passed: false,
        failed_check: 'run',
        error: notDoneReason,
        run_id: null,
        steps: 0,
        tokens: 0,
        seconds: 0,
        infrastructure: false,
        window_tokens: null,
      };
    }
    const {
      checks: _checks,
      started_at: _started,
      ended_at: _ended,
      attempts: _attempts,
      facts,
      infrastructure,
      ...summary
    } = result;
    return {
      ...summary,
      infrastructure: infrastructure === true,
      window_tokens: facts?.window_tokens ?? null,
    };
  });
  const models = plan.models.map((model): ModelSummary => {
    const mine = cells.filter((cell) => cell.model === model);
    const ran = mine.filter((cell) => cell.run_id !== null && !cell.infrastructure);
    const scored = mine.filter((cell) => byId.has(cellId(cell)) && !cell.infrastructure);
    const passed = scored.filter((cell) => cell.passed).length;
    return {
      model,
      passed,
      total: scored.length,
      infrastructure_failures: mine.filter((cell) => cell.infrastructure).length,
      pass_rate: scored.length === 0 ? null : Math.round((passed / scored.length) * 1000) / 1000,
      median_steps: median(ran.map((cell) => cell.steps)),
      median_seconds: median(ran.map((cell) => cell.seconds)),
      tokens: mine.reduce((sum, cell) => sum + cell.tokens, 0),
      ...repeatScores(scored),
      ...modelFacts(results.filter((cell) => cell.model === model)),
    };
  });
  return { id: plan.id, name: plan.name, cells, models };
}

/** The middle value (the mean of the two middle ones for an even count); null for none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const value = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return Math.round(value * 100) / 100;
}

/**
 * A model's scores over repeats (SPEC §12.1): pass@1, pass^k, flip rate and a 95% Wilson
 * interval of its pass rate. Pure arithmetic over the cells that count against the model
 * (infrastructure failures do not).
 */

/** The normal quantile of a two-sided 95% interval. */
const Z95 = 1.959963984540054;

/** A proportion's interval: both ends in 0–1. */
export interface Interval {
  readonly low: number;
  readonly high: number;
}

/**
 * The Wilson score interval of `successes` out of `trials` (95% by default); null for no trials.
 * Unlike p ± z·√(p(1−p)/n) it stays inside 0–1 and is not empty at 0 or n successes.
 */
export function wilsonInterval(successes: number, trials: number, z = Z95): Interval | null {
  if (trials <= 0) return null;
  if (successes < 0 || successes > trials) {
    throw new RangeError(`wilsonInterval: ${successes} successes out of ${trials} trials`);
  }
  const p = successes / trials;
  const z2 = z * z;
  const denominator = 1 + z2 / trials;
  const centre = (p + z2 / (2 * trials)) / denominator;
  const half = (z / denominator) * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  return { low: Math.max(0, centre - half), high: Math.min(1, centre + half) };
}

/** One cell's outcome, as the scores need it. */
export interface ScoredCell {
  readonly task: string;
  readonly passed: boolean;
}

/** A model's scores over its counted cells; every figure is null when no cell counts. */
export interface RepeatScores {
  /** The mean pass rate over every counted cell (an estimate of one run's chance). */
  readonly pass_at_1: number | null;
  /** The share of tasks passed on every counted repeat. */
  readonly pass_hat_k: number | null;
  /** The share of tasks with two or more counted repeats whose outcome differs between them. */
  readonly flip_rate: number | null;
  /** The 95% Wilson interval of the pass rate over the counted cells. */
  readonly interval: Interval | null;
}

/** Scores a model's counted cells (any order; several repeats of a task grouped by its id). */
export function repeatScores(cells: readonly ScoredCell[]): RepeatScores {
  if (cells.length === 0) return { pass_at_1: null, pass_hat_k: null, flip_rate: null, interval: null };
  const passed = cells.filter((cell) => cell.passed).length;
  const byTask = new Map<string, boolean[]>();
  for (const cell of cells) byTask.set(cell.task, [...(byTask.get(cell.task) ?? []), cell.passed]);
  const tasks = [...byTask.values()];
  const always = tasks.filter((outcomes) => outcomes.every(Boolean)).length;
  const repeated = tasks.filter((outcomes) => outcomes.length >= 2);
  const flipped = repeated.filter((outcomes) => outcomes.some(Boolean) && !outcomes.every(Boolean)).length;
  const interval = wilsonInterval(passed, cells.length);
  return {
    pass_at_1: round3(passed / cells.length),
    pass_hat_k: round3(always / tasks.length),
    flip_rate: repeated.length === 0 ? null : round3(flipped / repeated.length),
    // Four places, so a percentage rounded from it is the interval's own (0.0945 → 9%, not 10%).
    interval: interval === null ? null : { low: round4(interval.low), high: round4(interval.high) },
  };
}

function round3(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function round4(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

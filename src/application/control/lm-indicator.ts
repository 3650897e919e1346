/**
 * The LM indicator's decision rule (SPEC §7): one glanceable state for downstream apps, decided
 * from the model calls of a recent window. Pure: the numbers come in, the verdict goes out.
 * Thresholds and their reasons: docs/adr/0003-control-plane.md.
 */
import type { CallTotals } from './control-ports.ts';

/** The indicator exactly as exported (`lm_indicator.json`, and over HTTP). */
export interface LmIndicator {
  readonly status: 'offline' | 'healthy' | 'degraded';
  readonly reason: 'db_off' | 'no_calls' | 'high_error_rate' | 'ok';
  /** `null` when there is nothing to divide by (no calls, or no database). */
  readonly success_rate: number | null;
  readonly error_rate: number | null;
  readonly total_calls: number;
  readonly db_off: boolean;
}

/** The indicator's rule. */
export interface LmIndicatorRules {
  /** How far back the indicator looks: recent enough to mean "now". */
  readonly windowHours: number;
  /** Above this share of failed calls the LM is `degraded`. */
  readonly maxErrorRate: number;
}

/** The defaults: the last 24 hours; more than 20% failed calls is degraded. */
export const LM_INDICATOR_RULES: LmIndicatorRules = { windowHours: 24, maxErrorRate: 0.2 };

/**
 * Decides the indicator. `totals` is `null` when the control database is off or unreachable:
 * then nothing is known and the indicator says so (`offline`, `db_off`) instead of guessing.
 */
export function decideLmIndicator(
  totals: CallTotals | null,
  rules: LmIndicatorRules = LM_INDICATOR_RULES,
): LmIndicator {
  if (totals === null) {
    return {
      status: 'offline',
      reason: 'db_off',
      success_rate: null,
      error_rate: null,
      total_calls: 0,
      db_off: true,
    };
  }
  const total = totals.total_calls;
  if (total <= 0) {
    // No recent call is no evidence that a model answers: shown as offline, not as healthy.
    return {
      status: 'offline',
      reason: 'no_calls',
      success_rate: null,
      error_rate: null,
      total_calls: 0,
      db_off: false,
    };
  }
  const errorRate = totals.failures / total;
  const degraded = errorRate > rules.maxErrorRate;
  return {
    status: degraded ? 'degraded' : 'healthy',
    reason: degraded ? 'high_error_rate' : 'ok',
    success_rate: round(totals.successes / total),
    error_rate: round(errorRate),
    total_calls: total,
    db_off: false,
  };
}

function round(value: number): number {
  return Math.round(value * 10_000) / 10_000;
}

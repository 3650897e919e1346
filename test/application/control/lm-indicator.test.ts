import { describe, expect, it } from 'vitest';
import { decideLmIndicator, LM_INDICATOR_RULES } from '../../../src/application/control/lm-indicator.ts';

const totals = (total: number, failures: number) => ({
  total_calls: total,
  successes: total - failures,
  failures,
});

describe('decideLmIndicator', () => {
  it('is offline with db_off when the control database cannot be read', () => {
    expect(decideLmIndicator(null)).toEqual({
      status: 'offline',
      reason: 'db_off',
      success_rate: null,
      error_rate: null,
      total_calls: 0,
      db_off: true,
    });
  });

  it('is offline with no_calls when no model was called in the window', () => {
    expect(decideLmIndicator(totals(0, 0))).toEqual({
      status: 'offline',
      reason: 'no_calls',
      success_rate: null,
      error_rate: null,
      total_calls: 0,
      db_off: false,
    });
  });

  it('is degraded with high_error_rate above 20% failed calls', () => {
    expect(decideLmIndicator(totals(10, 3))).toEqual({
      status: 'degraded',
      reason: 'high_error_rate',
      success_rate: 0.7,
      error_rate: 0.3,
      total_calls: 10,
      db_off: false,
    });
  });

  it('is healthy and ok at 20% failed calls or fewer', () => {
    expect(decideLmIndicator(totals(5, 1))).toEqual({
      status: 'healthy',
      reason: 'ok',
      success_rate: 0.8,
      error_rate: 0.2,
      total_calls: 5,
      db_off: false,
    });
    expect(decideLmIndicator(totals(3, 0))).toMatchObject({
      status: 'healthy',
      error_rate: 0,
      success_rate: 1,
    });
  });

  it('rounds the rates to four decimals and honours other thresholds', () => {
    expect(decideLmIndicator(totals(3, 1))).toMatchObject({ error_rate: 0.3333, success_rate: 0.6667 });
    expect(decideLmIndicator(totals(10, 1), { ...LM_INDICATOR_RULES, maxErrorRate: 0.05 })).toMatchObject({
      status: 'degraded',
      reason: 'high_error_rate',
    });
  });

  it('looks at the last 24 hours and calls more than 20% failures degraded by default', () => {
    expect(LM_INDICATOR_RULES).toEqual({ windowHours: 24, maxErrorRate: 0.2 });
  });
});

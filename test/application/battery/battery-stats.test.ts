import { describe, expect, it } from 'vitest';
import { repeatScores, wilsonInterval } from '../../../src/application/battery/battery-stats.ts';

describe('the 95% Wilson interval', () => {
  it('matches published values', () => {
    // Newcombe (1998), Statistics in Medicine 17:857, table I: 81/263 → 0.2553–0.3662.
    const newcombe = wilsonInterval(81, 263)!;
    expect(newcombe.low).toBeCloseTo(0.2553, 4);
    expect(newcombe.high).toBeCloseTo(0.3662, 4);
    // Newcombe's 15/148 → 0.0624–0.1605, and 0/20 → 0–0.1611.
    expect(wilsonInterval(15, 148)!.low).toBeCloseTo(0.0624, 4);
    expect(wilsonInterval(15, 148)!.high).toBeCloseTo(0.1605, 4);
    expect(wilsonInterval(0, 20)).toEqual({ low: 0, high: expect.closeTo(0.1611, 4) });
    // 8/10 → 0.4902–0.9433 (not the Wald interval's 0.5521–1.0479).
    expect(wilsonInterval(8, 10)!.low).toBeCloseTo(0.4902, 4);
    expect(wilsonInterval(8, 10)!.high).toBeCloseTo(0.9433, 4);
  });

  it('stays within 0–1, is symmetric around one half, and is undefined without trials', () => {
    const all = wilsonInterval(5, 5)!;
    expect(all.high).toBe(1);
    expect(all.low).toBeCloseTo(0.5655, 4);
    const half = wilsonInterval(5, 10)!;
    expect(half.low + half.high).toBeCloseTo(1, 10);
    expect(wilsonInterval(0, 0)).toBeNull();
    expect(() => wilsonInterval(3, 2)).toThrow(RangeError);
  });
});

describe('scores over repeats', () => {
  it('gives a flaky model its pass@1, pass^k, flip rate and interval', () => {
    // Three tasks, three repeats: a always passes, b passes once, c never passes.
    const outcomes: Record<string, boolean[]> = {
      a: [true, true, true],
      b: [true, false, false],
      c: [false, false, false],
    };
    const cells = Object.entries(outcomes).flatMap(([task, passes]) =>
      passes.map((passed) => ({ task, passed })),
    );
    const interval = wilsonInterval(4, 9)!;
    expect(repeatScores(cells)).toEqual({
      pass_at_1: 0.444,
      pass_hat_k: 0.333,
      flip_rate: 0.333,
      interval: {
        low: Math.round(interval.low * 10_000) / 10_000,
        high: Math.round(interval.high * 10_000) / 10_000,
      },
    });
    expect(repeatScores(cells).interval).toEqual({ low: 0.1888, high: 0.7333 });
  });

  it('has no flip rate without a repeated task, and no figures without cells', () => {
    expect(repeatScores([{ task: 'a', passed: true }])).toMatchObject({
      pass_at_1: 1,
      pass_hat_k: 1,
      flip_rate: null,
    });
    expect(repeatScores([])).toEqual({ pass_at_1: null, pass_hat_k: null, flip_rate: null, interval: null });
  });
});

import { describe, expect, it } from 'vitest';
import { RateGate, retryAfterMs } from '../../../src/infrastructure/llm/rate-gate.ts';

describe('retryAfterMs', () => {
  const now = Date.parse('2026-11-27T12:00:00Z');
  it('reads retry-after-ms, retry-after in seconds or as a date, and the longer OpenAI reset', () => {
    expect(retryAfterMs(new Headers({ 'retry-after-ms': '1500', 'retry-after': '9' }), now)).toBe(1500);
    expect(retryAfterMs(new Headers({ 'retry-after': '2' }), now)).toBe(2000);
    expect(retryAfterMs(new Headers({ 'retry-after': 'Fri, 27 Nov 2026 12:00:05 GMT' }), now)).toBe(5000);
    expect(
      retryAfterMs(
        new Headers({ 'x-ratelimit-reset-requests': '1m0.5s', 'x-ratelimit-reset-tokens': '20ms' }),
        now,
      ),
    ).toBe(60_500);
    expect(retryAfterMs(new Headers({ 'x-ratelimit-reset-tokens': '6m0s' }), now)).toBe(360_000);
  });

  it('says nothing when no header says when to come back, or says it in words it cannot read', () => {
    expect(retryAfterMs(new Headers({}), now)).toBeUndefined();
    expect(retryAfterMs(new Headers({ 'x-ratelimit-reset-requests': 'soon' }), now)).toBeUndefined();
    expect(retryAfterMs(undefined, now)).toBeUndefined();
  });
});

describe('RateGate', () => {
  it('spaces requests to the configured rate, in the order they asked', async () => {
    const gate = new RateGate(600); // one per 100 ms
    const signal = new AbortController().signal;
    const order: number[] = [];
    const started = Date.now();
    await Promise.all([0, 1, 2].map((i) => gate.wait(signal).then(() => order.push(i))));
    expect(order).toEqual([0, 1, 2]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(195);
  });

  it('lets a request held by a retry-after be cancelled at once', async () => {
    const gate = new RateGate(undefined);
    gate.hold(60_000);
    const controller = new AbortController();
    const waiting = gate.wait(controller.signal);
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toThrow('cancelled');
  });
});

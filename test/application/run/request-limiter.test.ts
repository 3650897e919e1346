import { describe, expect, it } from 'vitest';
import { RequestLimiter } from '../../../src/application/run/request-limiter.ts';
import { FabricError } from '../../../src/domain/errors.ts';

function deferred() {
  let resolve: () => void = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('RequestLimiter', () => {
  it('lets at most max requests run, and serves the waiters in order', async () => {
    const limiter = new RequestLimiter(2);
    const gates = [deferred(), deferred(), deferred()];
    const order: number[] = [];
    const never = new AbortController().signal;
    const runs = gates.map((gate, index) =>
      limiter.run(never, async () => {
        order.push(index);
        await gate.promise;
      }),
    );
    await Promise.resolve();
    expect(limiter.active).toBe(2);
    expect(limiter.waiting).toBe(1);
    expect(order).toEqual([0, 1]);
    gates[1]!.resolve();
    await runs[1];
    await Promise.resolve();
    expect(order).toEqual([0, 1, 2]);
    gates[0]!.resolve();
    gates[2]!.resolve();
    await Promise.all(runs);
    expect(limiter.active).toBe(0);
  });

  it('serves a waiting request of an earlier run before those of later runs, whatever came first', async () => {
    const limiter = new RequestLimiter(1);
    const never = new AbortController().signal;
    const first = deferred();
    const order: string[] = [];
    const held = limiter.run(never, () => first.promise, 0);
    // Runs 3, 2 and 1 ask in that order while run 0 holds the only slot; run 3 asks twice.
    const asks = [
      ['run3-a', 3],
      ['run2', 2],
      ['run3-b', 3],
      ['run1', 1],
    ] as const;
    const waiting = asks.map(([name, priority]) =>
      limiter.run(
        never,
        async () => {
          order.push(name);
        },
        priority,
      ),
    );
    expect(limiter.waiting).toBe(4);
    first.resolve();
    await held;
    await Promise.all(waiting);
    expect(order).toEqual(['run1', 'run2', 'run3-a', 'run3-b']);
  });

  it('releases the slot when the work throws', async () => {
    const limiter = new RequestLimiter(1);
    const never = new AbortController().signal;
    await expect(limiter.run(never, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await limiter.run(never, async () => 'next')).toBe('next');
  });

  it('takes a cancelled waiter out of the queue with run_cancelled', async () => {
    const limiter = new RequestLimiter(1);
    const gate = deferred();
    const first = limiter.run(new AbortController().signal, () => gate.promise);
    const controller = new AbortController();
    const waiting = limiter.run(controller.signal, async () => 'never');
    expect(limiter.waiting).toBe(1);
    controller.abort();
    const error = await waiting.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('run_cancelled');
    expect(limiter.waiting).toBe(0);
    gate.resolve();
    await first;
    expect(limiter.active).toBe(0);
  });
});

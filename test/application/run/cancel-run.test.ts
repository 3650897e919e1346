import { describe, expect, it } from 'vitest';
import { type CancelRunDeps, cancelRun } from '../../../src/application/run/cancel-run.ts';
import type { RunRecord } from '../../../src/application/runs/run-record.ts';
import { MemoryWorkerRegistry } from '../../../src/infrastructure/memory/memory-worker-registry.ts';
import { ManualClock } from '../queue/queue-harness.ts';

/** The fields of a record cancelling reads; the rest does not matter here. */
function record(status: RunRecord['status'], live = false): RunRecord {
  return { run_id: 'r1', status, live } as unknown as RunRecord;
}

describe('cancelRun', () => {
  it('cancels a live run and answers with its record once it has ended', async () => {
    let ended: () => void = () => {};
    const settled = new Promise<void>((resolve) => {
      ended = resolve;
    });
    let cancelled = 0;
    let status: RunRecord['status'] = 'running';
    const deps: CancelRunDeps = {
      live: () => ({
        cancel: () => {
          cancelled++;
          status = 'cancelled';
          ended();
        },
        settled,
      }),
      show: async () => record(status, status === 'running'),
      queue: () => Promise.reject(new Error('the queue is not asked about a live run')),
    };
    expect(await cancelRun(deps, 'r1')).toEqual({ kind: 'ended', record: record('cancelled') });
    expect(cancelled).toBe(1);
  });

  it('answers cancelling when a live run has not ended within the wait', async () => {
    const deps: CancelRunDeps = {
      live: () => ({ cancel: () => {}, settled: new Promise(() => {}) }),
      show: () => Promise.reject(new Error('not read')),
      queue: async () => null,
      waitMs: 1,
    };
    expect(await cancelRun(deps, 'r1')).toEqual({ kind: 'cancelling' });
  });

  it("asks a worker's run to cancel, and answers with its record once the worker ended it", async () => {
    const workers = new MemoryWorkerRegistry(new ManualClock());
    let shown = 0;
    const deps: CancelRunDeps = {
      live: () => undefined,
      // The worker hears the request with its heartbeat: a few reads later the run has ended.
      show: async () => {
        shown++;
        const asked = (await workers.cancelRequested(['r1'])).length > 0;
        return record(asked && shown > 3 ? 'cancelled' : 'running');
      },
      queue: async () => ({ workers }),
      pollMs: 1,
    };
    expect(await cancelRun(deps, 'r1')).toEqual({ kind: 'ended', record: record('cancelled') });
    expect(await workers.cancelRequested(['r1'])).toEqual(['r1']);
  });

  it('asks a queued run to cancel, and answers cancelling while it has not ended', async () => {
    const workers = new MemoryWorkerRegistry(new ManualClock());
    const deps: CancelRunDeps = {
      live: () => undefined,
      show: async () => record('queued'),
      queue: async () => ({ workers }),
      waitMs: 0,
      pollMs: 1,
    };
    expect(await cancelRun(deps, 'r1')).toEqual({ kind: 'cancelling' });
    expect(await workers.cancelRequested(['r1'])).toEqual(['r1']);
  });

  it('says not_active for an ended run, and for a run nobody here can stop', async () => {
    const workers = new MemoryWorkerRegistry(new ManualClock());
    const withQueue = (status: RunRecord['status'], live: boolean): CancelRunDeps => ({
      live: () => undefined,
      show: async () => record(status, live),
      queue: async () => ({ workers }),
    });
    expect(await cancelRun(withQueue('succeeded', false), 'r1')).toEqual({
      kind: 'not_active',
      record: record('succeeded'),
    });
    // Without the queue, a running run that is not live here is another process's.
    expect(await cancelRun({ ...withQueue('running', false), queue: async () => null }, 'r1')).toEqual({
      kind: 'not_active',
      record: record('running'),
    });
    expect(await workers.cancelRequested(['r1'])).toEqual([]);
  });
});

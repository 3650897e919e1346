import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PostgresControlStore } from '../../../src/infrastructure/control/postgres-control-store.ts';
import { type QueueServices, openRunQueue } from '../../../src/infrastructure/queue/open-run-queue.ts';
import { createTestDatabase } from '../control/pg-test-db.ts';

describe('the Postgres run queue and worker registry', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let services: QueueServices[];
  const open = async () => {
    const opened = await openRunQueue(db.dsn);
    services.push(opened);
    return opened;
  };
  beforeEach(async () => {
    db = await createTestDatabase();
    services = [];
  });
  afterEach(async () => {
    await Promise.all(services.map((s) => s.close()));
    await db.drop();
  });

  it('hands each queued run to one taker only, from the queue of its specialist', async () => {
    const a = await open();
    const b = await open();
    await a.queue.prepare(['units', 'rust']);
    for (const n of [1, 2, 3])
      await a.queue.enqueue({ runId: `run-${n}`, specialist: 'units', task: `t${n}` });
    await a.queue.enqueue({ runId: 'run-rust', specialist: 'rust', task: 'compile', maxSteps: 4 });
    const first = await a.queue.take(['units'], 2);
    const second = await b.queue.take(['units'], 5);
    expect(first.map((job) => job.run.runId).sort()).toEqual(['run-1', 'run-2']);
    expect(second.map((job) => job.run.runId)).toEqual(['run-3']);
    expect(await b.queue.take(['units'], 5)).toEqual([]);
    const rust = await b.queue.take(['rust'], 5);
    expect(rust.map((job) => job.run)).toEqual([
      { runId: 'run-rust', specialist: 'rust', task: 'compile', maxSteps: 4 },
    ]);
    for (const job of [...first, ...second]) await a.queue.settle(job, 'ended');
  });

  it('lists workers by heartbeat and marks the runs of a silent one interrupted, once', async () => {
    const { workers } = await open();
    const store = new PostgresControlStore(db.dsn);
    try {
      await workers.recordQueued({ runId: 'r-live', specialist: 'units', task: 'a' });
      await workers.recordQueued({ runId: 'r-dead', specialist: 'units', task: 'b' });
      await workers.recordTaken('r-dead');
      expect((await store.getRun('r-dead'))?.status).toBe('running');
      expect((await store.getRun('r-live'))?.status).toBe('queued');
      const worker = {
        id: 'w1',
        host: 'box',
        pid: 42,
        specialists: ['units'],
        concurrency: 2,
        runs: ['r-dead'],
      };
      await workers.heartbeat(worker);
      expect(await workers.list()).toMatchObject([
        { id: 'w1', host: 'box', state: 'running', runs: ['r-dead'] },
      ]);
      expect(await workers.reapDeadWorkers(60_000)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await workers.reapDeadWorkers(10)).toEqual(['r-dead']);
      expect(await workers.reapDeadWorkers(10)).toEqual([]);
      expect((await store.getRun('r-dead'))?.status).toBe('interrupted');
      expect((await store.getRun('r-live'))?.status).toBe('queued');
      expect((await workers.list())[0]?.state).toBe('dead');
    } finally {
      await store.close();
    }
  });

  it('records cancel requests and runs that could not start', async () => {
    const { workers } = await open();
    const store = new PostgresControlStore(db.dsn);
    try {
      await workers.recordQueued({ runId: 'r1', specialist: 'units', task: 'a' });
      await workers.requestCancel('r1');
      await workers.requestCancel('r1');
      expect(await workers.cancelRequested(['r0', 'r1'])).toEqual(['r1']);
      await workers.recordNotStarted('r1', 'cancelled', {
        code: 'run_cancelled',
        message: 'before it started',
      });
      expect(await store.getRun('r1')).toMatchObject({
        status: 'cancelled',
        error: { code: 'run_cancelled' },
      });
    } finally {
      await store.close();
    }
  });
});

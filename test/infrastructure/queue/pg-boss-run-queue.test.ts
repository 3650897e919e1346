import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
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

  it('leases a taken run with a growing token, renews it, and reaps it once it expires', async () => {
    const { workers } = await open();
    const store = new PostgresControlStore(db.dsn);
    try {
      await workers.recordQueued({ runId: 'r-live', specialist: 'units', task: 'a' });
      await workers.recordQueued({ runId: 'r-dead', specialist: 'units', task: 'b' });
      const live = await workers.recordTaken('r-live', {
        workerId: 'w1',
        leaseMs: 60_000,
        jobId: 'j1',
        resumable: true,
      });
      const dead = await workers.recordTaken('r-dead', {
        workerId: 'w2',
        leaseMs: 20,
        jobId: 'j2',
        resumable: true,
      });
      if (live === null || dead === null) throw new Error('a queued run was not leased');
      expect(BigInt(dead.token)).toBeGreaterThan(BigInt(live.token));
      // Taken once: a second take of the same run finds it no longer queued.
      expect(
        await workers.recordTaken('r-dead', {
          workerId: 'w1',
          leaseMs: 60_000,
          jobId: 'j2',
          resumable: true,
        }),
      ).toBeNull();
      expect((await store.getRun('r-dead'))?.status).toBe('running');
      const worker = {
        id: 'w1',
        host: 'box',
        pid: 42,
        specialists: ['units'],
        concurrency: 2,
        runs: ['r-live'],
      };
      expect(await workers.heartbeat(worker)).toBe(true);
      expect(await workers.list()).toMatchObject([
        { id: 'w1', host: 'box', state: 'running', runs: ['r-live'] },
      ]);
      // w2 never heartbeat (it died right after taking): its run's lease alone decides.
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await workers.renewLeases('w1', [live, dead], 60_000)).toEqual(['r-live']);
      expect(await workers.reapDeadWorkers(60_000, 0)).toEqual([
        { runId: 'r-dead', jobId: 'j2', resumed: false },
      ]);
      expect(await workers.reapDeadWorkers(60_000, 0)).toEqual([]);
      expect(await store.getRun('r-dead')).toMatchObject({
        status: 'interrupted',
        error: { code: 'run_interrupted' },
      });
      expect((await store.getRun('r-live'))?.status).toBe('running');
      // A lease that was reaped is not renewed again.
      expect(await workers.renewLeases('w2', [dead], 60_000)).toEqual([]);
      // A silent worker is dead, and does not come back under its id.
      expect(await workers.reapDeadWorkers(10, 0)).toEqual([]);
      expect((await workers.list())[0]?.state).toBe('dead');
      expect(await workers.heartbeat(worker)).toBe(false);
    } finally {
      await store.close();
    }
  });

  it("hands a dead worker's resumable run back to the queue worker.max_resumes times, then interrupts it", async () => {
    const { queue, workers } = await open();
    const store = new PostgresControlStore(db.dsn);
    try {
      const lapse = () => new Promise((resolve) => setTimeout(resolve, 50));
      await queue.enqueue({ runId: 'r1', specialist: 'units', task: 'a' });
      await workers.recordQueued({ runId: 'r1', specialist: 'units', task: 'a' });
      await queue.enqueue({ runId: 'cell', specialist: 'units', task: 'b' });
      await workers.recordQueued({ runId: 'cell', specialist: 'units', task: 'b' });
      const taken = await queue.take(['units'], 2);
      const cellJob = taken.find((job) => job.run.runId === 'cell');
      const cell = await workers.recordTaken('cell', {
        workerId: 'w',
        leaseMs: 20,
        jobId: cellJob!.jobId,
        resumable: false,
      });
      expect(cell?.resumes).toBe(0);
      const takes: (number | undefined)[] = [];
      for (let take = 0; take < 3; take++) {
        const job =
          take === 0 ? taken.find((j) => j.run.runId === 'r1') : (await queue.take(['units'], 1))[0];
        expect(job?.run.runId).toBe('r1');
        const lease = await workers.recordTaken('r1', {
          workerId: `w${take}`,
          leaseMs: 20,
          jobId: job!.jobId,
          resumable: true,
        });
        takes.push(lease?.resumes);
        await lapse();
        const reaped = await workers.reapDeadWorkers(60_000, 2);
        expect(reaped.find((run) => run.runId === 'r1')?.resumed).toBe(take < 2);
        if (take === 0) expect(reaped.find((run) => run.runId === 'cell')?.resumed).toBe(false);
        // The job is still active: sent again as an orphan while its run is queued.
        expect(await queue.requeueOrphans?.(0)).toEqual(take < 2 ? ['r1'] : []);
      }
      expect(takes).toEqual([0, 1, 2]);
      expect(await store.getRun('r1')).toMatchObject({
        status: 'interrupted',
        error: {
          code: 'run_interrupted',
          message: expect.stringContaining('resumed 2 times by other workers already (worker.max_resumes 2)'),
        },
      });
      expect(await store.getRun('cell')).toMatchObject({
        status: 'interrupted',
        error: { message: 'Its worker stopped renewing its lease (died, or cut off from the database).' },
      });
    } finally {
      await store.close();
    }
  });

  it("refuses a fenced writer's events and run_end once its lease is gone", async () => {
    const { workers } = await open();
    const writer = new PostgresControlStore(db.dsn);
    const reader = new PostgresControlStore(db.dsn);
    try {
      await workers.recordQueued({ runId: 'r1', specialist: 'units', task: 'a' });
      const lease = await workers.recordTaken('r1', {
        workerId: 'w1',
        leaseMs: 20,
        jobId: 'j1',
        resumable: true,
      });
      if (lease === null) throw new Error('not leased');
      writer.fence('r1', lease.token);
      const start = event('r1', 1, 'run_start', {
        specialist: 'units',
        task: 'a',
        model: 'm',
        backend: 'lm_studio',
      });
      expect((await writer.write({ events: [start], modelCalls: [] })).events).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect((await workers.reapDeadWorkers(60_000, 0)).map((run) => run.runId)).toEqual(['r1']);
      // The zombie's backlog: a later event and a run_end that would say succeeded.
      const late = await writer.write({
        events: [event('r1', 2, 'tool_call', { name: 'x' }), end('r1', 3, 'succeeded')],
        modelCalls: [],
      });
      expect(late.events).toBe(0);
      expect((await reader.getRun('r1'))?.status).toBe('interrupted');
      expect((await reader.runEvents('r1')).map((e) => e.seq)).toEqual([1]);
      // A writer that holds the current lease writes as before.
      await workers.recordQueued({ runId: 'r2', specialist: 'units', task: 'b' });
      const second = await workers.recordTaken('r2', {
        workerId: 'w1',
        leaseMs: 60_000,
        jobId: 'j2',
        resumable: true,
      });
      if (second === null) throw new Error('not leased');
      writer.fence('r2', second.token);
      expect((await writer.write({ events: [end('r2', 1, 'succeeded')], modelCalls: [] })).events).toBe(1);
      expect((await reader.getRun('r2'))?.status).toBe('succeeded');
      // Ended by its own run_end, the run is still held (a cell's checks run after it); reaped, lost.
      expect(await workers.renewLeases('w1', [second, lease], 60_000)).toEqual(['r2']);
      // A stale token (an older take) is refused too.
      writer.fence('r2', lease.token);
      expect((await writer.write({ events: [event('r2', 2, 'tool_call', {})], modelCalls: [] })).events).toBe(
        0,
      );
    } finally {
      await writer.close();
      await reader.close();
    }
  });

  it('sends again a job whose fetch answer was lost, so its run is not queued for ever', async () => {
    const { workers } = await open();
    const target = new URL(db.dsn);
    const proxy = await startTcpProxy({
      target: { host: target.hostname, port: Number(target.port || 5432) },
    });
    const cut = await openRunQueue(db.dsn.replace(`:${target.port || 5432}/`, `:${proxy.port}/`));
    const reaper = await open();
    try {
      await cut.queue.prepare(['units']);
      await workers.recordQueued({ runId: 'r-lost', specialist: 'units', task: 'a' });
      await reaper.queue.enqueue({ runId: 'r-lost', specialist: 'units', task: 'a' });
      // The fetch reaches Postgres, which takes the job; its answer never comes back.
      proxy.arm({ kind: 'cut_at_byte', direction: 'to_client', at: 0 });
      expect(await cut.queue.take(['units'], 1)).toEqual([]);
      expect(proxy.fired).toBe(true);
      expect(await reaper.queue.take(['units'], 1)).toEqual([]);
      // Not before the bound (a worker between its fetch and its lease), and once after it.
      expect(await reaper.queue.requeueOrphans?.(60_000)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(await reaper.queue.requeueOrphans?.(10)).toEqual(['r-lost']);
      expect(await reaper.queue.requeueOrphans?.(10)).toEqual([]);
      const again = await reaper.queue.take(['units'], 1);
      expect(again.map((job) => job.run)).toEqual([{ runId: 'r-lost', specialist: 'units', task: 'a' }]);
      expect(
        await workers.recordTaken('r-lost', {
          workerId: 'w',
          leaseMs: 60_000,
          jobId: again[0]!.jobId,
          resumable: true,
        }),
      ).not.toBeNull();
    } finally {
      await cut.close();
      await proxy.close();
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
      const lease = await workers.recordTaken('r1', {
        workerId: 'w1',
        leaseMs: 60_000,
        jobId: 'j1',
        resumable: true,
      });
      if (lease === null) throw new Error('not leased');
      // A stale lease changes nothing.
      await workers.recordNotStarted({ runId: 'r1', token: '0' }, 'failed', {
        code: 'internal',
        message: 'x',
      });
      expect((await store.getRun('r1'))?.status).toBe('running');
      await workers.recordNotStarted(lease, 'cancelled', {
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

function event(runId: string, seq: number, kind: string, body: Record<string, unknown>): RunEvent {
  return { v: 1, run_id: runId, seq, kind, ts: new Date().toISOString(), ...body } as unknown as RunEvent;
}

function end(runId: string, seq: number, status: string): RunEvent {
  return event(runId, seq, 'run_end', {
    status,
    payload: null,
    error: null,
    steps: 1,
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    duration_ms: 5,
  });
}

import { afterEach, describe, expect, it } from 'vitest';
import { QueueWorker, type QueueWorkerOptions } from '../../../src/application/queue/queue-worker.ts';
import { workerJobs } from '../../../src/application/queue/worker-jobs.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { ScriptedRunTask, memoryQueue, queued, until } from './queue-harness.ts';

const IDENTITY = { id: 'w-1', host: 'host-a', pid: 101 };

/** A worker on a memory queue whose jobs go through a scripted RunTask; the test stops it. */
function harness(options: Partial<QueueWorkerOptions> = {}, failures?: ReadonlyMap<string, Error>) {
  const { clock, queue, registry } = memoryQueue();
  const task = new ScriptedRunTask(failures);
  const lines: string[] = [];
  const log = (line: string) => lines.push(line);
  const worker = new QueueWorker({
    queue,
    registry,
    identity: IDENTITY,
    specialists: ['units'],
    concurrency: 1,
    heartbeatMs: 5,
    deadAfterMs: 60_000,
    maxResumes: 0,
    pollMs: 1,
    log,
    execute: workerJobs({
      runTask: task.run,
      resumeTask: () => Promise.reject(new Error('no resumes in this test')),
      cellJob: () => Promise.reject(new Error('no cells in this test')),
      log,
    }),
    ...options,
  });
  // Counts the worker's heartbeats: each is a turn of its beat (cancel requests, the reaper).
  let beats = 0;
  const heartbeat = registry.heartbeat.bind(registry);
  registry.heartbeat = (info) => {
    if (info.id === IDENTITY.id) beats++;
    return heartbeat(info);
  };
  /** Waits for `count` more heartbeats: time enough for the worker to have acted on what it saw. */
  const heartbeats = async (count: number) => {
    const target = beats + count;
    await until(`${count} heartbeats`, () => beats >= target);
  };
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  const start = () => {
    running = worker.run(controller.signal);
    return running;
  };
  const stop = async () => {
    controller.abort();
    await running;
  };
  stops.push(stop);
  return { clock, queue, registry, task, lines, worker, start, stop, heartbeats };
}

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()));
});

describe('QueueWorker', () => {
  it('takes jobs only while it has room, and the next once a run ends', async () => {
    const h = harness({ concurrency: 2 });
    for (const id of ['r1', 'r2', 'r3']) await h.queue.enqueue(queued(id));
    void h.start();
    await until('two runs started', () => h.task.started.length === 2);
    await h.heartbeats(5);
    expect(h.task.started.map((run) => run.request.runId)).toEqual(['r1', 'r2']);
    expect(h.queue.waiting().map((run) => run.runId)).toEqual(['r3']);
    expect(h.worker.runs().sort()).toEqual(['r1', 'r2']);

    h.task.byId('r1').end();
    await until('r3 started', () => h.task.started.length === 3);
    expect(h.queue.waiting()).toEqual([]);
    h.task.byId('r2').end();
    h.task.byId('r3').end();
    await until('every job settled', () => h.queue.settled().size === 3);
    expect([...h.queue.settled()]).toEqual(
      expect.arrayContaining([
        ['r1', 'ended'],
        ['r2', 'ended'],
        ['r3', 'ended'],
      ]),
    );
    expect(h.registry.run('r1')?.status).toBe('running');
  });

  it("takes only its specialists' runs", async () => {
    const h = harness({ specialists: ['units'] });
    await h.queue.enqueue(queued('other-1', 'research'));
    await h.queue.enqueue(queued('mine-1', 'units'));
    void h.start();
    await until('its run started', () => h.task.started.length === 1);
    await h.heartbeats(3);
    expect(h.task.started.map((run) => run.request.runId)).toEqual(['mine-1']);
    expect(h.queue.waiting('research').map((run) => run.runId)).toEqual(['other-1']);
    expect(h.queue.prepared()).toEqual(['units']);
  });

  it('heartbeats with its runs, and reports itself stopped with none after shutdown', async () => {
    const h = harness({ concurrency: 3 });
    await h.queue.enqueue(queued('r1'));
    void h.start();
    await until('the heartbeat lists r1', async () =>
      (await h.registry.list()).some((row) => row.id === 'w-1' && row.runs.includes('r1')),
    );
    expect((await h.registry.list())[0]).toMatchObject({
      id: 'w-1',
      host: 'host-a',
      pid: 101,
      specialists: ['units'],
      concurrency: 3,
      state: 'running',
    });
    await h.stop();
    expect((await h.registry.list())[0]).toMatchObject({ id: 'w-1', state: 'stopped', runs: [] });
  });

  it('cancels a run in progress that someone asked to cancel', async () => {
    const h = harness();
    await h.queue.enqueue(queued('r1'));
    void h.start();
    await until('r1 started', () => h.task.started.length === 1);
    await h.registry.requestCancel('r1');
    expect(await h.task.byId('r1').ended).toBe('cancelled');
    await until('r1 settled', () => h.queue.settled().has('r1'));
    expect(h.queue.settled().get('r1')).toBe('ended');
  });

  it('never starts a run cancelled before it was taken', async () => {
    const h = harness();
    await h.registry.recordQueued(queued('r1'));
    await h.queue.enqueue(queued('r1'));
    await h.registry.requestCancel('r1');
    void h.start();
    await until('r1 settled', () => h.queue.settled().has('r1'));
    expect(h.task.started).toEqual([]);
    expect(h.queue.settled().get('r1')).toBe('not_started');
    expect(h.registry.run('r1')).toEqual({
      status: 'cancelled',
      error: { code: 'run_cancelled', message: 'Cancelled before it started.' },
    });
  });

  it('records a run that could not start as failed, with its code, and goes on', async () => {
    const failures = new Map([['no model', new FabricError('model_not_found', 'No model "x" anywhere.')]]);
    const h = harness({}, failures);
    await h.registry.recordQueued(queued('r1', 'units', 'no model'));
    await h.queue.enqueue(queued('r1', 'units', 'no model'));
    await h.queue.enqueue(queued('r2'));
    void h.start();
    await until('r2 started', () => h.task.started.length === 1);
    expect(h.registry.run('r1')).toEqual({
      status: 'failed',
      error: { code: 'model_not_found', message: 'No model "x" anywhere.' },
    });
    expect(h.queue.settled().get('r1')).toBe('not_started');
    expect(h.lines).toContain('run r1 could not start: No model "x" anywhere.');
  });

  it("marks the runs of a dead worker's expired leases interrupted, and not its own", async () => {
    const h = harness({ deadAfterMs: 30_000 });
    await h.registry.heartbeat({
      id: 'w-dead',
      host: 'host-b',
      pid: 7,
      specialists: ['units'],
      concurrency: 1,
      runs: [],
    });
    // Taken a moment before its worker died: on no heartbeat's list, but its lease is on its row.
    await h.registry.heartbeat({
      id: 'w-dead',
      host: 'host-b',
      pid: 7,
      specialists: ['units'],
      concurrency: 1,
      runs: [],
    });
    expect(
      await h.registry.recordTaken('old', {
        workerId: 'w-dead',
        leaseMs: 30_000,
        jobId: 'j',
        resumable: true,
      }),
    ).toEqual({
      runId: 'old',
      token: '1',
      resumes: 0,
    });
    await h.queue.enqueue(queued('r1'));
    void h.start();
    await until('r1 started', () => h.task.started.length === 1);
    await h.heartbeats(3);
    expect(h.registry.run('old')?.status).toBe('running');

    // Time passes with this worker beating (renewing its own lease) and w-dead silent.
    for (let step = 0; step < 4; step++) {
      h.clock.advance(8_000);
      await h.heartbeats(2);
    }
    await until('old interrupted', () => h.registry.run('old')?.status === 'interrupted');
    expect(h.registry.run('r1')?.status).toBe('running');
    const rows = await h.registry.list();
    expect(rows.find((row) => row.id === 'w-dead')?.state).toBe('dead');
    expect(rows.find((row) => row.id === 'w-1')?.state).toBe('running');
    expect(h.lines).toContain('marked 1 run whose lease expired interrupted: old');
  });

  it('keeps a handed-on run interrupted, with why, when it cannot resume it (its runlog out of reach)', async () => {
    const missing = new FabricError('run_not_found', 'No runlog at /runs/old/runlog.jsonl.');
    const h = harness({
      maxResumes: 2,
      execute: workerJobs({
        runTask: () => Promise.reject(new Error('not started here')),
        resumeTask: () => Promise.reject(missing),
        cellJob: () => Promise.reject(new Error('no cells in this test')),
        log: () => {},
      }),
    });
    await h.registry.recordQueued(queued('old'));
    await h.registry.recordTaken('old', { workerId: 'w-dead', leaseMs: 1_000, jobId: 'j', resumable: true });
    h.clock.advance(2_000);
    expect(await h.registry.reapDeadWorkers(60_000, 2)).toEqual([
      { runId: 'old', jobId: 'j', resumed: true },
    ]);
    expect(h.registry.run('old')).toMatchObject({ status: 'queued', resumes: 1 });
    // The Postgres queue sends its job again as an orphan; the memory queue is told here.
    await h.queue.enqueue(queued('old'));
    void h.start();
    await until('old ended', () => h.registry.run('old')?.status === 'interrupted');
    expect(h.registry.run('old')?.error?.message).toMatch(
      /could not resume it: No runlog at \/runs\/old\/runlog.jsonl\.$/,
    );
    expect(h.lines).toContain('run old resumed (units, resume 1)');
    expect(h.queue.settled().get('old')).toBe('not_started');
  });

  it('cancels its runs on shutdown and waits for them to end', async () => {
    const h = harness({ concurrency: 2 });
    await h.queue.enqueue(queued('r1'));
    await h.queue.enqueue(queued('r2'));
    const done = h.start();
    await until('two runs started', () => h.task.started.length === 2);
    await h.stop();
    await done;
    expect(await Promise.all(h.task.started.map((run) => run.ended))).toEqual(['cancelled', 'cancelled']);
    expect(h.queue.settled().size).toBe(2);
    expect(h.worker.runs()).toEqual([]);
    expect(h.lines).toContain('cancelling 2 runs in progress');
  });

  it('says once that the queue database is down, and goes on when it answers', async () => {
    const h = harness();
    let down = true;
    let takes = 0;
    const fault = () => Promise.reject(new Error('connection refused'));
    const { queue, registry } = h;
    const take = queue.take.bind(queue);
    queue.take = (specialists, limit) => {
      takes++;
      return down ? fault() : take(specialists, limit);
    };
    const heartbeat = registry.heartbeat.bind(registry);
    registry.heartbeat = (worker) => (down ? fault() : heartbeat(worker));
    const cancelRequested = registry.cancelRequested.bind(registry);
    // As the Postgres registry does: an empty list is answered without the database.
    registry.cancelRequested = (runIds) => (down && runIds.length > 0 ? fault() : cancelRequested(runIds));
    const reap = registry.reapDeadWorkers.bind(registry);
    registry.reapDeadWorkers = (ms, max) => (down ? fault() : reap(ms, max));
    await queue.enqueue(queued('r1'));
    void h.start();
    await until('several takes tried', () => takes >= 5);
    expect(h.lines.filter((line) => line.includes('connection refused'))).toEqual([
      'could not write the heartbeat: connection refused',
    ]);
    expect(h.task.started).toEqual([]);
    // Nothing reached the database: it is not said to answer.
    expect(h.lines).not.toContain('the queue database answers again');
    down = false;
    await until('r1 started', () => h.task.started.length === 1);
    await until('said to answer again', () => h.lines.includes('the queue database answers again'));
  });

  it('stops a run whose lease it cannot renew for deadAfterMs, as interrupted, without the database', async () => {
    let now = 0;
    const h = harness({ deadAfterMs: 1_000, now: () => now });
    await h.queue.enqueue(queued('r1'));
    void h.start();
    await until('r1 started', () => h.task.started.length === 1);
    const renew = h.registry.renewLeases.bind(h.registry);
    // The database stops answering renewals (and everything else): the worker alone must act.
    h.registry.renewLeases = () => new Promise(() => {});
    h.registry.heartbeat = () => new Promise(() => {});
    // Stopped two heartbeats (5 ms each here) before the lease can expire.
    now = 985;
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(h.task.started[0]?.request.signal.aborted).toBe(false);
    now = 991;
    expect(await h.task.byId('r1').ended).toBe('cancelled');
    const reason = h.task.byId('r1').request.signal.reason as Error;
    expect(reason.name).toBe('RunInterruption');
    expect(reason.message).toMatch(/lease could not be renewed before it expires \(worker.dead_after_s 1 s/);
    expect(h.lines).toContain(
      'run r1 stopped: its lease could not be renewed before it expires (worker.dead_after_s 1 s: the queue database is out of reach); it is interrupted',
    );
    h.registry.renewLeases = renew;
  });

  it('stops a run at once when its lease was lost, and fences its runlog (nothing more written)', async () => {
    const h = harness({ deadAfterMs: 30_000 });
    await h.queue.enqueue(queued('r1'));
    void h.start();
    await until('r1 started', () => h.task.started.length === 1);
    // Reaped while the worker was away: the row says interrupted, the lease no longer holds.
    h.clock.advance(31_000);
    await h.registry.reapDeadWorkers(60_000, 0);
    expect(h.registry.run('r1')?.status).toBe('interrupted');
    await h.task.byId('r1').ended;
    const request = h.task.byId('r1').request;
    const lost = request.signal.reason as Error;
    expect(lost.message).toMatch(/^its lease was lost \(reaped, or taken by another worker meanwhile\)/);
    // The run's recorder asks the fence before each line: it gets the loss, and writes nothing.
    expect(request.fence?.()).toBe(lost);
    expect(h.lines.some((line) => line.startsWith('run r1 lost: its lease was lost'))).toBe(true);
  });

  it('registers again under a new id after being declared dead', async () => {
    const h = harness({ deadAfterMs: 30_000 });
    void h.start();
    await h.heartbeats(2);
    h.clock.advance(31_000);
    // Another process reaps before this worker's next beat.
    const heartbeat = h.registry.heartbeat;
    h.registry.heartbeat = async () => true;
    await h.registry.reapDeadWorkers(30_000, 0);
    h.registry.heartbeat = heartbeat;
    await until('a new registration', async () =>
      (await h.registry.list()).some((row) => row.id === 'w-1-2' && row.state === 'running'),
    );
    expect((await h.registry.list()).find((row) => row.id === 'w-1')?.state).toBe('dead');
    expect(h.worker.id).toBe('w-1-2');
    expect(h.lines).toContain('w-1 was declared dead while out of reach; registering again as w-1-2');
  });
});

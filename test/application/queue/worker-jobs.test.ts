import { describe, expect, it } from 'vitest';
import { QueueWorker } from '../../../src/application/queue/queue-worker.ts';
import type { QueuedCell } from '../../../src/application/queue/queue-ports.ts';
import { type QueuedCellRun, workerJobs } from '../../../src/application/queue/worker-jobs.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { ScriptedRunTask, memoryQueue, queued, until } from './queue-harness.ts';

const CELL: QueuedCell = {
  archive: 'archive-1',
  spec: { id: 'fix-it', task: 'Fix it.', expect: { status: 'succeeded', commands: [], files_contain: {} } },
};

describe('the worker’s job handling', () => {
  it('runs a queued run through the RunTask with the id the server answered', async () => {
    const task = new ScriptedRunTask();
    const lines: string[] = [];
    const execute = workerJobs({
      runTask: task.run,
      resumeTask: () => Promise.reject(new Error('no resumes in this test')),
      cellJob: () => Promise.reject(new Error('not a cell')),
      log: (line) => lines.push(line),
    });
    const controller = new AbortController();
    const done = execute(
      {
        runId: 'r1',
        specialist: 'rust',
        task: 'Fix it.',
        workspace: '/shared/ws',
        model: 'coder',
        maxSteps: 7,
      },
      controller.signal,
    );
    await until('the run started', () => task.started.length === 1);
    const request = task.byId('r1').request;
    expect(request).toMatchObject({
      specialist: 'rust',
      task: 'Fix it.',
      workspace: '/shared/ws',
      model: 'coder',
      maxSteps: 7,
      runId: 'r1',
    });
    expect(request.signal).toBe(controller.signal);
    request.onNotice?.('control plane unavailable');
    expect(lines).toEqual(['run r1: control plane unavailable']);
    task.byId('r1').end();
    await expect(done).resolves.toBeUndefined();
  });

  it('hands a battery cell to the cell-job port, not to the RunTask', async () => {
    const task = new ScriptedRunTask();
    const lines: string[] = [];
    const cells: { run: QueuedCellRun; signal: AbortSignal }[] = [];
    const execute = workerJobs({
      runTask: task.run,
      resumeTask: () => Promise.reject(new Error('no resumes in this test')),
      cellJob: async (run, signal, onNotice) => {
        cells.push({ run, signal });
        onNotice('unpacking');
      },
      log: (line) => lines.push(line),
    });
    const signal = new AbortController().signal;
    await execute({ ...queued('cell-1', 'rust'), tags: { repeat: '2' }, cell: CELL }, signal);
    expect(task.started).toEqual([]);
    expect(cells).toHaveLength(1);
    expect(cells[0]!.run).toMatchObject({
      runId: 'cell-1',
      specialist: 'rust',
      cell: CELL,
      tags: { repeat: '2' },
    });
    expect(cells[0]!.signal).toBe(signal);
    expect(lines).toEqual(['run cell-1: unpacking']);
  });

  it('resumes a run handed on from a dead worker (its lease counts resumes) instead of starting it; a cell is refused', async () => {
    const task = new ScriptedRunTask();
    const resumed: string[] = [];
    const lines: string[] = [];
    const execute = workerJobs({
      runTask: task.run,
      resumeTask: async (request) => {
        resumed.push(request.run);
        request.onNotice('resuming');
        return { runId: request.run, status: 'succeeded' } as never;
      },
      cellJob: () => Promise.reject(new Error('not a cell')),
      log: (line) => lines.push(line),
    });
    const signal = new AbortController().signal;
    await execute(queued('r1'), signal, { runId: 'r1', token: '7', resumes: 1 });
    expect(resumed).toEqual(['r1']);
    expect(task.started).toEqual([]);
    expect(lines).toEqual(['run r1: resuming']);
    await expect(
      execute({ ...queued('c1'), cell: CELL }, signal, { runId: 'c1', token: '8', resumes: 1 }),
    ).rejects.toMatchObject({ code: 'run_not_resumable' });
    expect(resumed).toEqual(['r1']);
  });

  it('rejects when the run could not start, so the worker records it as not started', async () => {
    const refusal = new FabricError('specialist_unknown', 'No specialist "nope".');
    const execute = workerJobs({
      runTask: () => Promise.reject(refusal),
      resumeTask: () => Promise.reject(new Error('no resumes in this test')),
      cellJob: () => Promise.reject(new FabricError('internal', 'The cell could not run.')),
      log: () => {},
    });
    const signal = new AbortController().signal;
    await expect(execute(queued('r1', 'nope'), signal)).rejects.toBe(refusal);
    await expect(execute({ ...queued('c1'), cell: CELL }, signal)).rejects.toThrow('The cell could not run.');
  });

  it('on a worker: runs and cells end, a cell that did not run is recorded failed', async () => {
    const { queue, registry } = memoryQueue();
    const task = new ScriptedRunTask();
    const cellRuns: string[] = [];
    const lines: string[] = [];
    const log = (line: string) => lines.push(line);
    const worker = new QueueWorker({
      queue,
      registry,
      identity: { id: 'w-1', host: 'h', pid: 1 },
      specialists: ['units'],
      concurrency: 3,
      heartbeatMs: 5,
      deadAfterMs: 60_000,
      maxResumes: 0,
      pollMs: 1,
      log,
      execute: workerJobs({
        runTask: task.run,
        resumeTask: () => Promise.reject(new Error('no resumes in this test')),
        cellJob: async (run) => {
          cellRuns.push(run.runId);
          if (run.cell.archive === 'gone') throw new FabricError('internal', 'The archive is gone.');
        },
        log,
      }),
    });
    const runs = [
      queued('plain'),
      { ...queued('cell-ok'), cell: CELL },
      { ...queued('cell-gone'), cell: { ...CELL, archive: 'gone' } },
    ];
    for (const run of runs) {
      await registry.recordQueued(run);
      await queue.enqueue(run);
    }
    const controller = new AbortController();
    const stopped = worker.run(controller.signal);
    await until('the plain run started', () => task.started.length === 1);
    task.byId('plain').end();
    await until('every job settled', () => queue.settled().size === 3);
    controller.abort();
    await stopped;
    expect(task.started.map((run) => run.request.runId)).toEqual(['plain']);
    expect(cellRuns.sort()).toEqual(['cell-gone', 'cell-ok']);
    expect(Object.fromEntries(queue.settled())).toEqual({
      plain: 'ended',
      'cell-ok': 'ended',
      'cell-gone': 'not_started',
    });
    expect(registry.run('cell-gone')).toEqual({
      status: 'failed',
      error: { code: 'internal', message: 'The archive is gone.' },
    });
    expect(registry.run('plain')?.status).toBe('running');
  });
});

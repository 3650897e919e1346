import { describe, expect, it } from 'vitest';
import type { CellOutcome } from '../../../src/application/battery/cell-executor.ts';
import { QueuedCellExecutor } from '../../../src/application/battery/queued-cells.ts';
import { type QueuedCellRun, executeQueuedCell } from '../../../src/application/battery/worker-cell-job.ts';
import type { QueuedRun } from '../../../src/application/queue/queue-ports.ts';
import type { RunRequest } from '../../../src/application/run/run-request.ts';
import { MemoryWorkspaces } from '../../../src/infrastructure/memory/memory-workspaces.ts';
import { ScriptedChecks, runResult } from '../../support/battery-ports.ts';

const SPEC = {
  id: 'contains',
  task: 'Add Region::contains_point',
  expect: { status: 'succeeded' as const, commands: ['cargo test'], files_contain: {} },
};

function queuedCell(archive: string | undefined): QueuedCellRun {
  return {
    runId: 'run-queued-1',
    specialist: 'rust',
    task: SPEC.task,
    model: 'lab/alpha-7b',
    maxSteps: 9,
    tags: { battery: 'bat-1', task: 'contains', model: 'lab/alpha-7b', repeat: '2' },
    cell: { archive, spec: SPEC },
  };
}

describe("a worker's job for a queued battery cell", () => {
  it('runs the cell under its queued id in a copy unpacked from the archive, checks it there and reports', async () => {
    const runs: RunRequest[] = [];
    const reported: [string, CellOutcome][] = [];
    const workspaces = new MemoryWorkspaces('/mem/unpacked');
    const archives: string[] = [];
    const checks = new ScriptedChecks(['cargo test']);
    const notices: string[] = [];
    await executeQueuedCell(
      {
        runTask: async (request) => {
          runs.push(request);
          request.onNotice?.('control plane unavailable');
          return runResult(request, request.runId ?? '?', { status: 'succeeded', steps: 5 });
        },
        checksFor: (specialist) => (specialist === 'rust' ? checks : new ScriptedChecks()),
        workspacesFromArchive: (archive) => {
          archives.push(archive);
          return workspaces;
        },
        reports: { report: async (runId, outcome) => void reported.push([runId, outcome]) },
      },
      queuedCell('bat-1'),
      new AbortController().signal,
      (message) => notices.push(message),
    );
    expect(archives).toEqual(['bat-1']);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({
      specialist: 'rust',
      runId: 'run-queued-1',
      model: 'lab/alpha-7b',
      maxSteps: 9,
      workspace: workspaces.prepared[0],
    });
    expect(notices).toEqual(['control plane unavailable']);
    expect(checks.asked).toEqual([{ workspace: workspaces.prepared[0], check: 'cargo test' }]);
    expect(workspaces.present()).toEqual([]);
    expect(reported).toHaveLength(1);
    const [runId, outcome] = reported[0]!;
    expect(runId).toBe('run-queued-1');
    expect(outcome.kind).toBe('ran');
    if (outcome.kind !== 'ran') return;
    expect(outcome.run).toEqual({
      run_id: 'run-queued-1',
      status: 'succeeded',
      steps: 5,
      tokens: 100,
      error: null,
      error_code: null,
    });
    expect(outcome.checks.map((check) => [check.check, check.outcome])).toEqual([
      ['status', 'passed'],
      ['command: cargo test', 'failed'],
    ]);
  });

  it('reports a cell whose run could not start, retrying the report, then rejects so the worker marks it', async () => {
    const attempts: CellOutcome[] = [];
    const waits: number[] = [];
    const job = executeQueuedCell(
      {
        runTask: async (request) => runResult(request, 'x', { throws: 'No model "lab/alpha-7b"' }),
        checksFor: () => new ScriptedChecks(),
        workspacesFromArchive: () => {
          throw new Error('the battery has no workspace: no archive is asked for');
        },
        reports: {
          report: async (_runId, outcome) => {
            attempts.push(outcome);
            if (attempts.length < 3) throw new Error('connection reset');
          },
        },
        sleep: async (ms) => void waits.push(ms),
      },
      queuedCell(undefined),
      new AbortController().signal,
      () => {},
    );
    await expect(job).rejects.toMatchObject({ code: 'internal', message: 'No model "lab/alpha-7b"' });
    expect(attempts).toHaveLength(3);
    expect(attempts[2]).toEqual({ kind: 'not_run', error: 'No model "lab/alpha-7b"', infrastructure: true });
    expect(waits).toEqual([200, 400]);
  });
});

describe('a battery cell queued for the workers', () => {
  it('queues the cell under a run id from the run use case and collects the outcome its worker reports', async () => {
    const queued: QueuedRun[] = [];
    const recorded: QueuedRun[] = [];
    let polls = 0;
    const reported: CellOutcome = {
      kind: 'ran',
      run: { run_id: 'run-minted-7', status: 'succeeded', steps: 3, tokens: 80, error: null },
      checks: [{ check: 'status', outcome: 'passed', message: 'the run succeeded' }],
    };
    const executor = new QueuedCellExecutor(
      {
        queue: {
          queue: { enqueue: async (run) => void queued.push(run) },
          workers: { recordQueued: async (run) => void recorded.push(run), requestCancel: async () => {} },
          cells: {
            putArchive: async () => {},
            outcome: async () => (++polls < 2 ? null : reported),
          },
        },
        runs: { getRun: async () => null },
        newRunId: () => 'run-minted-7',
        clock: { now: () => new Date() },
      },
      'rust',
      'bat-1',
    );
    const outcome = await executor.execute(
      {
        cell: { task: 'contains', model: 'lab/alpha-7b', repeat: 1 },
        spec: SPEC,
        maxSteps: undefined,
        tags: { battery: 'bat-1' },
        hasWorkspace: true,
      },
      new AbortController().signal,
    );
    expect(outcome).toEqual(reported);
    expect(recorded).toEqual(queued);
    expect(queued).toEqual([
      {
        runId: 'run-minted-7',
        specialist: 'rust',
        task: SPEC.task,
        model: 'lab/alpha-7b',
        maxSteps: undefined,
        tags: { battery: 'bat-1' },
        cell: { archive: 'bat-1', spec: SPEC },
      },
    ]);
  });

  /** A queued cell executor whose runs' rows say what `statusOf` says; the outcome of `reportFor`. */
  function requeueing(statusOf: (runId: string) => string, reportFor: (runId: string) => CellOutcome | null) {
    const queued: QueuedRun[] = [];
    let minted = 0;
    const executor = new QueuedCellExecutor(
      {
        queue: {
          queue: { enqueue: async (run) => void queued.push(run) },
          workers: { recordQueued: async () => {}, requestCancel: async () => {} },
          cells: { putArchive: async () => {}, outcome: async (runId) => reportFor(runId) },
        },
        runs: {
          getRun: async (id) =>
            ({ id, status: statusOf(id), steps: 2, total_tokens: 40, error: null }) as never,
        },
        newRunId: () => `run-${++minted}`,
        clock: { now: () => new Date() },
      },
      'rust',
      'bat-1',
    );
    const work = {
      cell: { task: 'contains', model: 'lab/alpha-7b', repeat: 1 },
      spec: SPEC,
      maxSteps: undefined,
      tags: { battery: 'bat-1' },
      hasWorkspace: true,
    };
    return { queued, execute: () => executor.execute(work, new AbortController().signal) };
  }

  it("puts a cell whose worker died back on the queue once, as a new run, and takes that run's outcome", async () => {
    const reported: CellOutcome = {
      kind: 'ran',
      run: { run_id: 'run-2', status: 'succeeded', steps: 3, tokens: 80, error: null },
      checks: [{ check: 'status', outcome: 'passed', message: 'the run succeeded' }],
    };
    const cell = requeueing(
      (id) => (id === 'run-1' ? 'interrupted' : 'running'),
      (id) => (id === 'run-2' ? reported : null),
    );
    expect(await cell.execute()).toEqual(reported);
    expect(cell.queued.map((run) => run.runId)).toEqual(['run-1', 'run-2']);
    expect(cell.queued[1]).toMatchObject({ task: SPEC.task, cell: { archive: 'bat-1', spec: SPEC } });
  });

  it('fails a cell whose worker died twice, naming both runs, and queues it no third time', async () => {
    const cell = requeueing(
      () => 'interrupted',
      () => null,
    );
    const outcome = await cell.execute();
    expect(outcome).toMatchObject({
      kind: 'ran',
      run: {
        run_id: 'run-2',
        status: 'failed',
        error: 'the run was interrupted twice, its worker stopped heartbeating each time (runs run-1, run-2)',
      },
    });
    expect(cell.queued).toHaveLength(2);
  });
});

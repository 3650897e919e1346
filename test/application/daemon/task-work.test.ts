import { describe, expect, it } from 'vitest';
import { emptyState } from '../../../src/application/daemon/daemon-state.ts';
import { type TaskWorkContext, workTask } from '../../../src/application/daemon/task-work.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import {
  eventLog,
  fakeRunResult,
  openSpecChange,
  openSpecTask,
  QueuedRunner,
  QueuedValidator,
  steppingClock,
} from '../../support/daemon-fakes.ts';

const TASK = openSpecTask('1.2', 'A two');
const ITEM = {
  change: openSpecChange('a', [openSpecTask('1.1', 'A one', true), TASK]),
  task: TASK,
  done: [],
  baseline: new Set<string>(),
};

function context(
  parts: {
    runner?: QueuedRunner;
    validator?: QueuedValidator;
    hookFails?: boolean;
    backendWaitMs?: number;
  } = {},
) {
  const log = eventLog();
  const git = { restores: 0, commits: [] as string[] };
  const ticks: string[] = [];
  let saves = 0;
  const ctx: TaskWorkContext = {
    runner: parts.runner ?? new QueuedRunner(),
    validator: parts.validator ?? new QueuedValidator(),
    clippy: undefined,
    openspec: {
      tick: async (change, task) => {
        ticks.push(`${change} ${task.id}`);
      },
    },
    git: {
      restore: async () => {
        git.restores += 1;
      },
      changedFiles: async () => ['src/lib.rs'],
      ensureReady: async () => {},
      setAside: async (name) => `refs/fabric/parked/${name}`,
      bringBack: async () => ({ ok: true }),
      dropAside: async () => {},
      commit: async (message) => {
        if (parts.hookFails) throw new FabricError('tool_failed', 'pre-commit said no');
        git.commits.push(message);
        return { commit: 'c1', size: { files: 2, added: 5, removed: 1 } };
      },
    },
    clock: steppingClock(),
    state: emptyState('/repo', new Date(0)),
    maxAttempts: 2,
    models: [undefined],
    reruns: 0,
    backoff: { baseMs: 1, capMs: 4 },
    backendWaitMs: parts.backendWaitMs,
    outage: { since: null },
    save: async () => {
      saves += 1;
    },
    emit: log.emit,
  };
  return { ctx, log, git, ticks, saves: () => saves };
}

describe('the work on a task', () => {
  it('ticks and commits the first attempt that validates, with Fabric-Run and Fabric-Model trailers', async () => {
    const t = context();
    expect(await workTask(t.ctx, ITEM, new AbortController().signal)).toBe('done');
    expect(t.ticks).toEqual(['a 1.2']);
    expect(t.git.commits).toHaveLength(1);
    expect(t.git.commits[0]).toMatch(
      /^a 1\.2: A two\n[\s\S]*attempt 1 of 2[\s\S]*Fabric-Run: run1\nFabric-Model: m\n$/,
    );
    expect(t.ctx.state.tasks).toEqual([
      expect.objectContaining({
        status: 'done',
        attempts: 1,
        commit: 'c1',
        files_changed: 2,
        tests_passed: 4,
      }),
    ]);
    // The backend was never seen down: no backend_up.
    expect(t.log.kinds()).toEqual(['task_start', 'run_end', 'validation', 'task_done']);
  });

  it('retries a failed attempt with its feedback, and blocks with the last one when the attempts are spent', async () => {
    const runner = new QueuedRunner([{ kind: 'ran', result: fakeRunResult('r1', 'failed') }]);
    const t = context({ runner, validator: new QueuedValidator([false]) });
    expect(await workTask(t.ctx, ITEM, new AbortController().signal)).toBe('blocked');
    expect(runner.texts[1]).toContain('tool_failed: the model gave up');
    expect(t.git.restores).toBe(1);
    expect(t.ctx.state.tasks[0]).toMatchObject({
      status: 'blocked',
      attempts: 2,
      diagnostics: expect.stringContaining('The validation commands failed'),
    });
    // A retry is announced only when another attempt follows.
    expect(t.log.kinds().filter((kind) => kind === 'task_retry')).toHaveLength(1);
  });

  it('waits out a backend that is down without spending an attempt', async () => {
    const runner = new QueuedRunner([
      { kind: 'backend_down', message: 'refused' },
      { kind: 'backend_down', message: 'refused' },
    ]);
    const t = context({ runner });
    expect(await workTask(t.ctx, ITEM, new AbortController().signal)).toBe('done');
    expect(t.ctx.state.tasks[0]?.attempts).toBe(1);
    expect(t.ctx.state.backend).toMatchObject({ state: 'up', failures: 0 });
    expect(t.log.kinds()).toEqual([
      'task_start',
      'backend_down',
      'task_start',
      'backend_down',
      'task_start',
      'backend_up',
      'run_end',
      'validation',
      'task_done',
    ]);
  });

  it('gives up with --once after backendWaitMs without a model: the task pending, the tree restored, the servers named', async () => {
    const down =
      'No model server answered.\nAsked:\n  - lm_studio http://127.0.0.1:9: unreachable\nStart LM Studio';
    const runner = new QueuedRunner(
      Array.from({ length: 50 }, () => ({ kind: 'backend_down' as const, message: down })),
    );
    // The clock steps 10 ms a reading: a few waits, then the limit is passed.
    const t = context({ runner, backendWaitMs: 35 });
    const error = await workTask(t.ctx, ITEM, new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('backend_unavailable');
    expect((error as FabricError).message).toContain('Asked:\n  - lm_studio http://127.0.0.1:9: unreachable');
    expect((error as FabricError).message).toContain(
      'fabric daemon --once gave up after 0s without a model (daemon.backend_wait_s); a 1.2 is still pending.',
    );
    expect(t.ctx.state.tasks[0]).toMatchObject({ status: 'pending', attempts: 0 });
    expect(t.git.restores).toBe(1);
    expect(t.log.kinds().filter((kind) => kind === 'backend_down').length).toBeGreaterThan(0);
  });

  it('blocks the task when the commit fails, the tree restored', async () => {
    const t = context({ hookFails: true });
    expect(await workTask(t.ctx, ITEM, new AbortController().signal)).toBe('blocked');
    expect(t.git.restores).toBe(1);
    expect(t.ctx.state.tasks[0]?.diagnostics).toBe('Committing the task failed: pre-commit said no');
  });

  it('leaves the task pending and restores the tree when cancelled', async () => {
    const controller = new AbortController();
    const runner = new QueuedRunner();
    runner.abortOnRun = controller;
    const t = context({ runner });
    expect(await workTask(t.ctx, ITEM, controller.signal)).toBe('cancelled');
    expect(t.git.restores).toBe(1);
    expect(t.git.commits).toEqual([]);
    expect(t.ctx.state.tasks[0]?.status).toBe('pending');
    expect(t.log.kinds()).toEqual(['task_start', 'task_cancelled']);
  });
});

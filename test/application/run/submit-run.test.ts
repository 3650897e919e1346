import { describe, expect, it } from 'vitest';
import { type SubmitRunDeps, type SubmittedRun, submitRun } from '../../../src/application/run/submit-run.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { MemoryRunQueue } from '../../../src/infrastructure/memory/memory-run-queue.ts';
import { MemoryWorkerRegistry } from '../../../src/infrastructure/memory/memory-worker-registry.ts';
import { ManualClock } from '../queue/queue-harness.ts';

const REQUEST: SubmittedRun = {
  specialist: 'rust',
  task: 'Fix the build.',
  workspace: '/shared/ws',
  model: 'coder',
  maxSteps: 9,
};

/** Submission deps whose calls are recorded; the queue is on when `queue` is given. */
function deps(
  queue: { queue: MemoryRunQueue; workers: MemoryWorkerRegistry } | null,
  overrides: Partial<SubmitRunDeps> = {},
) {
  const calls: string[] = [];
  let ids = 0;
  const value: SubmitRunDeps = {
    queue: async () => queue,
    validate: async (request) => {
      calls.push(`validate ${request.specialist} ${request.workspace}`);
    },
    newRunId: () => `run-${++ids}`,
    startHere: async (request) => {
      calls.push(`start ${JSON.stringify(request)}`);
      return { runId: 'here-1', settled: Promise.resolve(null) };
    },
    ...overrides,
  };
  return { calls, value };
}

function memory() {
  return { queue: new MemoryRunQueue(), workers: new MemoryWorkerRegistry(new ManualClock()) };
}

describe('submitRun', () => {
  it('with the queue on: validates, records a queued row, enqueues with a new id, starts nothing', async () => {
    const queue = memory();
    const { calls, value } = deps(queue);
    const submitted = await submitRun(value, REQUEST);
    expect(submitted).toEqual({ status: 'queued', runId: 'run-1' });
    expect(calls).toEqual(['validate rust /shared/ws']);
    expect(queue.workers.run('run-1')?.status).toBe('queued');
    expect(queue.queue.waiting('rust')).toEqual([{ runId: 'run-1', ...REQUEST }]);
  });

  it('queues nothing when the request does not validate', async () => {
    const queue = memory();
    const refusal = new FabricError('specialist_unknown', 'No specialist "rust".');
    const { value } = deps(queue, { validate: () => Promise.reject(refusal) });
    await expect(submitRun(value, REQUEST)).rejects.toBe(refusal);
    expect(queue.queue.waiting()).toEqual([]);
  });

  it('answers queue_unavailable, saying what to check, when the queue cannot take the run', async () => {
    const queue = memory();
    queue.queue.enqueue = () => Promise.reject(new Error('connection refused'));
    const { value } = deps(queue);
    const error = await submitRun(value, REQUEST).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FabricError);
    expect(error).toMatchObject({ code: 'queue_unavailable' });
    expect((error as Error).message).toMatch(
      /^The run could not be queued: connection refused\. Check that the Postgres of FABRIC_DSN/,
    );
  });

  it('with the queue off: starts the run here, without waiting for a busy workspace', async () => {
    const { calls, value } = deps(null);
    const submitted = await submitRun(value, REQUEST);
    expect(submitted).toMatchObject({ status: 'running', runId: 'here-1' });
    expect(calls).toEqual([`start ${JSON.stringify({ ...REQUEST, waitForWorkspace: false })}`]);
  });

  it('passes on an error of opening the queue', async () => {
    const down = new FabricError('queue_unavailable', 'The run queue could not be opened.');
    const { calls, value } = deps(null, { queue: () => Promise.reject(down) });
    await expect(submitRun(value, REQUEST)).rejects.toBe(down);
    expect(calls).toEqual([]);
  });
});

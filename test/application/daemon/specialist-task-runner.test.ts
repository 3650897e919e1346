import { describe, expect, it } from 'vitest';
import { SpecialistTaskRunner } from '../../../src/application/daemon/specialist-task-runner.ts';
import type { RunRequest } from '../../../src/application/run/run-request.ts';
import type { ApprovalRecord } from '../../../src/domain/approvals.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { fakeRunResult } from '../../support/daemon-fakes.ts';

/** A runner over a RunTask that answers from a queue: a result, or an error to throw. */
function runnerOver(answers: (RunResult | Error)[]) {
  const requests: RunRequest[] = [];
  let refreshes = 0;
  const runner = new SpecialistTaskRunner(
    {
      run: async (request) => {
        requests.push(request);
        const answer = answers.shift() ?? fakeRunResult('r');
        if (answer instanceof Error) throw answer;
        return answer;
      },
      refreshCatalog: () => {
        refreshes += 1;
      },
    },
    { specialist: 'rust', workspace: '/repo', model: 'coder', observers: () => [] },
  );
  return { runner, requests, refreshes: () => refreshes };
}

describe('SpecialistTaskRunner', () => {
  it('starts a run of the specialist in the repository with the task text', async () => {
    const t = runnerOver([fakeRunResult('r1')]);
    const signal = new AbortController().signal;
    expect(await t.runner.run('Implement 1.1', signal)).toEqual({ kind: 'ran', result: fakeRunResult('r1') });
    expect(t.requests[0]).toMatchObject({
      specialist: 'rust',
      task: 'Implement 1.1',
      workspace: '/repo',
      model: 'coder',
      // No parking ports: nothing could tell when a parked run was answered, so a call that needs
      // approval is refused at once.
      defaultOnApproval: 'deny',
    });
  });

  it('says the backend is down, thrown or as a failed run, with the fix, and asks the backends afresh next time', async () => {
    const unreachable = {
      ...fakeRunResult('r1', 'failed'),
      error: { code: 'backend_unavailable', message: 'refused' },
    };
    const t = runnerOver([
      unreachable,
      new FabricError('model_not_found', 'no model coder\nload one in LM Studio'),
      fakeRunResult('r3'),
    ]);
    const signal = new AbortController().signal;
    expect(await t.runner.run('x', signal)).toEqual({ kind: 'backend_down', message: 'refused' });
    expect(t.refreshes()).toBe(0);
    expect(await t.runner.run('x', signal)).toEqual({
      kind: 'backend_down',
      message: 'no model coder\nload one in LM Studio',
    });
    expect(await t.runner.run('x', signal)).toMatchObject({ kind: 'ran' });
    expect(t.refreshes()).toBe(2);
  });

  it('is cancelled when the run throws after the signal aborted, and rethrows other errors', async () => {
    const controller = new AbortController();
    controller.abort();
    expect(await runnerOver([new Error('aborted')]).runner.run('x', controller.signal)).toEqual({
      kind: 'cancelled',
    });
    await expect(
      runnerOver([new FabricError('usage', 'bad workspace')]).runner.run('x', new AbortController().signal),
    ).rejects.toThrow('bad workspace');
  });

  it('with parking, parks its runs as their only resumer, and tells where a parked run stands reading its runlog only once nothing is pending', async () => {
    const requests: RunRequest[] = [];
    const read: string[] = [];
    let pending: ApprovalRecord[] = [
      { id: 'apr_1', tool: 'shell', argv: ['cargo', 'tree'] } as unknown as ApprovalRecord,
    ];
    let end: RunEvent | undefined;
    const runner = new SpecialistTaskRunner(
      {
        run: async (request) => {
          requests.push(request);
          return fakeRunResult('r1');
        },
        refreshCatalog: () => {},
        parking: {
          approvals: { list: async () => pending },
          runEvents: async (runId) => {
            read.push(runId);
            return end === undefined ? [] : [end];
          },
          cancelParked: async () => {},
        },
      },
      { specialist: 'rust', workspace: '/repo', model: 'coder', observers: () => [] },
    );
    await runner.run('Implement 1.1', new AbortController().signal);
    expect(requests[0]).toMatchObject({ defaultOnApproval: 'park', resumer: 'daemon' });

    expect(await runner.parked('r1')).toEqual({
      kind: 'waiting',
      approval: { id: 'apr_1', call: 'cargo tree' },
    });
    expect(read).toEqual([]);
    pending = [];
    end = { kind: 'run_end', status: 'awaiting_approval' } as RunEvent;
    expect(await runner.parked('r1')).toEqual({ kind: 'answered' });
    end = { kind: 'run_end', status: 'cancelled' } as RunEvent;
    expect(await runner.parked('r1')).toEqual({ kind: 'ended', status: 'cancelled' });
    expect(read).toEqual(['r1', 'r1']);
  });
});

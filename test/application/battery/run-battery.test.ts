import { describe, expect, it } from 'vitest';
import type { BatteryDeps } from '../../../src/application/battery/run-battery.ts';
import { runBattery } from '../../../src/application/battery/run-battery.ts';
import type { BatteryPlan, CellResult } from '../../../src/application/battery/battery-types.ts';
import { MemoryWorkspaces } from '../../../src/infrastructure/memory/memory-workspaces.ts';
import { runResult } from '../../support/battery-ports.ts';

const PLAN: BatteryPlan = {
  id: 'bat-1',
  name: 'two',
  specialist: 'rust',
  workspace: '/mem/ws',
  models: ['lab/a', 'lab/b', 'lab/c'],
  repeat: 1,
  maxSteps: undefined,
  tasks: [
    { id: 't', task: 'do it', expect: { status: 'succeeded', commands: ['cargo test'], files_contain: {} } },
  ],
};

describe('the battery runner', () => {
  it('counts a cell from its run to the end of its checks, and fails a model that cannot run with the reason', async () => {
    const events: string[] = [];
    const recorded: CellResult[] = [];
    const deps: BatteryDeps = {
      runner: {
        unusable: async (model) => {
          if (model === 'lab/c') throw new Error('the catalog is down');
          return null;
        },
        run: async (request) => {
          events.push(`run ${request.model}`);
          return runResult({ ...request, specialist: 'rust' }, `run-${request.model}`, {
            status: 'succeeded',
          });
        },
      },
      workspaces: new MemoryWorkspaces('/mem/ws'),
      checks: {
        command: async (_workspace, command) => {
          events.push('check start');
          await new Promise((resolve) => setTimeout(resolve, 20));
          events.push('check end');
          return { check: `command: ${command}`, outcome: 'passed', message: 'ok' };
        },
        fileContains: async () => ({ check: 'files', outcome: 'passed', message: 'ok' }),
      },
      recorder: { cellEnded: async (result) => void recorded.push(result) },
      clock: { now: () => new Date('2026-03-01T10:00:00Z') },
    };
    const outcome = await runBattery(PLAN, deps, { concurrency: 1, signal: new AbortController().signal });
    expect(events).toEqual([
      'run lab/a',
      'check start',
      'check end',
      'run lab/b',
      'check start',
      'check end',
    ]);
    expect(outcome.results.map((cell) => [cell.model, cell.status, cell.passed, cell.error])).toEqual([
      ['lab/a', 'succeeded', true, null],
      ['lab/b', 'succeeded', true, null],
      ['lab/c', 'not_run', false, 'the catalog is down'],
    ]);
    expect(recorded).toEqual(outcome.results);
  });

  it('keeps the cells done and runs again only those that could not run', async () => {
    const ran: string[] = [];
    const done = (model: string, status: CellResult['status']): CellResult => ({
      task: 't',
      model,
      repeat: 1,
      status,
      passed: status === 'succeeded',
      failed_check: status === 'succeeded' ? null : 'run',
      error: null,
      run_id: null,
      steps: 0,
      tokens: 0,
      seconds: 0,
      checks: [],
      started_at: 'x',
      ended_at: 'x',
    });
    const outcome = await runBattery(
      {
        ...PLAN,
        tasks: [{ ...PLAN.tasks[0]!, expect: { status: 'succeeded', commands: [], files_contain: {} } }],
      },
      {
        runner: {
          unusable: async () => null,
          run: async (request) => {
            ran.push(request.model);
            return runResult({ ...request, specialist: 'rust' }, 'run-new', { status: 'succeeded' });
          },
        },
        workspaces: new MemoryWorkspaces('/mem/ws'),
        checks: {
          command: async () => Promise.reject(new Error('no')),
          fileContains: async () => Promise.reject(new Error('no')),
        },
        recorder: { cellEnded: async () => {} },
        clock: { now: () => new Date() },
      },
      {
        concurrency: 2,
        done: [done('lab/a', 'succeeded'), done('lab/b', 'not_run')],
        signal: new AbortController().signal,
      },
    );
    expect(ran).toEqual(['lab/b', 'lab/c']);
    expect(outcome.results.map((cell) => [cell.model, cell.status, cell.run_id])).toEqual([
      ['lab/a', 'succeeded', null],
      ['lab/b', 'succeeded', 'run-new'],
      ['lab/c', 'succeeded', 'run-new'],
    ]);
  });
});

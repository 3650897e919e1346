import { describe, expect, it } from 'vitest';
import {
  BatteryReadModel,
  type LiveBatteries,
  type LiveBatteryView,
  batteryView,
} from '../../../src/application/battery/battery-read-model.ts';
import type {
  BatteryPlan,
  BatteryState,
  CellResult,
} from '../../../src/application/battery/battery-types.ts';
import { MemoryBatteryStates } from '../../../src/infrastructure/memory/memory-battery-state.ts';

function plan(id: string): BatteryPlan {
  return {
    id,
    name: `battery ${id}`,
    specialist: 'units',
    workspace: undefined,
    models: ['lab/a', 'lab/b'],
    repeat: 1,
    maxSteps: undefined,
    tasks: [{ id: 'km', task: 'convert', expect: { status: 'succeeded', commands: [], files_contain: {} } }],
  };
}

function cell(model: string, passed: boolean): CellResult {
  return {
    task: 'km',
    model,
    repeat: 1,
    status: passed ? 'succeeded' : 'failed',
    passed,
    failed_check: passed ? null : 'status',
    error: passed ? null : 'expected succeeded, the run ended failed',
    run_id: `run-${model}`,
    steps: 2,
    tokens: 50,
    seconds: 1,
    checks: [],
    started_at: '2026-03-01T10:00:00.000Z',
    ended_at: '2026-03-01T10:00:01.000Z',
  };
}

function state(id: string, status: BatteryState['status'], cells: CellResult[]): BatteryState {
  return {
    version: 1,
    plan: plan(id),
    file: '/mem/battery.yaml',
    status,
    created_at: '2026-03-01T10:00:00.000Z',
    updated_at: `updated ${id}`,
    cells,
  };
}

/** A hub with one battery running here. */
function hub(view: LiveBatteryView): LiveBatteries {
  return {
    live: (id) => (id === view.plan.id ? view : undefined),
    liveIds: () => [view.plan.id],
  };
}

describe('the read model of batteries', () => {
  it('shows a kept battery from its state, and one running here from its session, with its running cells', async () => {
    const states = new MemoryBatteryStates([state('bat-1', 'interrupted', [cell('lab/a', true)])]);
    const live: LiveBatteryView = {
      plan: plan('bat-2'),
      running: true,
      status: 'running',
      cells: [cell('lab/b', false)],
      started: new Set(['km × lab/a #1']),
    };
    const model = new BatteryReadModel(states, hub(live));
    const kept = await model.read('bat-1');
    expect(kept).toMatchObject({ status: 'interrupted', updatedAt: 'updated bat-1', live: false });
    expect(kept.started.size).toBe(0);
    const running = await model.read('bat-2');
    // Not saved yet: no time of writing, but its cells as they end.
    expect(running).toMatchObject({ status: 'running', updatedAt: null, live: true, cells: live.cells });
    expect([...running.started]).toEqual(['km × lab/a #1']);
  });

  it('lists the newest first, at most `limit`, leaving out what cannot be read', async () => {
    const states = new MemoryBatteryStates([state('bat-1', 'done', []), state('bat-3', 'done', [])]);
    const broken = {
      ids: async () => ['bat-4', ...(await states.ids())],
      read: (id: string) => (id === 'bat-4' ? Promise.reject(new Error('corrupt')) : states.read(id)),
    };
    const live: LiveBatteryView = {
      plan: plan('bat-2'),
      running: true,
      status: 'running',
      cells: [],
      started: new Set(),
    };
    const model = new BatteryReadModel(broken, hub(live));
    expect((await model.list(10)).map((record) => record.plan.id)).toEqual(['bat-3', 'bat-2', 'bat-1']);
    expect((await model.list(2)).map((record) => record.plan.id)).toEqual(['bat-3', 'bat-2']);
    await expect(model.read('bat-9')).rejects.toMatchObject({ code: 'run_not_found' });
    await expect(model.read('../etc')).rejects.toMatchObject({ code: 'usage' });
  });

  it('views a battery in the --json shape with where it stands, the cells not done saying why', async () => {
    const model = new BatteryReadModel(
      new MemoryBatteryStates([state('bat-1', 'interrupted', [cell('lab/a', true)])]),
    );
    const view = batteryView(await model.read('bat-1'));
    expect(view).toMatchObject({
      id: 'bat-1',
      name: 'battery bat-1',
      status: 'interrupted',
      specialist: 'units',
      cells_done: 1,
      cells_total: 2,
      live: false,
    });
    expect(view.cells.map((c) => [c.model, c.status])).toEqual([
      ['lab/a', 'succeeded'],
      ['lab/b', 'not_run'],
    ]);
    expect(view.cells[1]?.error).toContain('fabric battery --resume bat-1');
    // A cell not done does not count against its model.
    expect(view.models.map((m) => [m.model, m.passed, m.total])).toEqual([
      ['lab/a', 1, 1],
      ['lab/b', 0, 0],
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import type { BatteryPlan, CellKey } from '../../../src/application/battery/battery-types.ts';
import { planCells } from '../../../src/application/battery/battery-types.ts';
import { CellSchedule } from '../../../src/application/battery/cell-schedule.ts';

function plan(models: string[], tasks: string[], repeat = 1): BatteryPlan {
  return {
    id: 'bat-1',
    name: 'b',
    specialist: 'units',
    workspace: undefined,
    models,
    repeat,
    maxSteps: undefined,
    tasks: tasks.map((id) => ({
      id,
      task: id,
      expect: { status: 'succeeded', commands: [], files_contain: {} },
    })),
  };
}

const show = (cell: CellKey) => `${cell.model}:${cell.task}#${cell.repeat}`;

describe('the order cells run in', () => {
  it('runs one worker model after model, each model’s repeats in turn, though the plan lists task after task', () => {
    const cells = planCells(plan(['a', 'b'], ['t1', 't2', 't3'], 2));
    expect(cells.slice(0, 2).map(show)).toEqual(['a:t1#1', 'b:t1#1']);
    const schedule = new CellSchedule(cells, 1);
    const order: string[] = [];
    let current: string | undefined;
    for (let cell = schedule.next(current); cell !== undefined; cell = schedule.next(current)) {
      order.push(show(cell));
      current = cell.model;
    }
    expect(order).toEqual([
      'a:t1#1',
      'a:t2#1',
      'a:t3#1',
      'a:t1#2',
      'a:t2#2',
      'a:t3#2',
      'b:t1#1',
      'b:t2#1',
      'b:t3#1',
      'b:t1#2',
      'b:t2#2',
      'b:t3#2',
    ]);
    expect(schedule.size).toBe(0);
  });

  it('gives two workers on two servers a model each, and two workers on one server the same model', () => {
    const cells = planCells(plan(['a', 'b'], ['t1', 't2']));
    const two = new CellSchedule(cells, 2);
    const first = two.next(undefined)!;
    const second = two.next(undefined)!;
    expect([first.model, second.model]).toEqual(['a', 'b']);
    expect(two.next(first.model)?.model).toBe('a');
    expect(two.next(second.model)?.model).toBe('b');

    const one = new CellSchedule(cells, 1);
    expect([one.next(undefined)?.model, one.next(undefined)?.model]).toEqual(['a', 'a']);
    // a has no cell left: the next worker free to pick starts b.
    expect(one.next('a')?.model).toBe('b');
  });

  it('lets a worker that ran out of its model help the one with the most cells left', () => {
    const cells = planCells(plan(['a', 'b'], ['t1', 't2', 't3', 't4']));
    const schedule = new CellSchedule(
      cells.filter((cell) => cell.model === 'b' || cell.task === 't1'),
      2,
    );
    const x = schedule.next(undefined)!;
    const y = schedule.next(undefined)!;
    expect([x.model, y.model]).toEqual(['a', 'b']);
    // a is done; b, held by y, still has three cells: x helps.
    expect(schedule.next(x.model)?.model).toBe('b');
  });
});

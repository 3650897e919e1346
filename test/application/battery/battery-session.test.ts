import { describe, expect, it } from 'vitest';
import { BatterySession } from '../../../src/application/battery/battery-session.ts';
import type { BatteryState, CellResult } from '../../../src/application/battery/battery-types.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { MemoryBatteryStates } from '../../../src/infrastructure/memory/memory-battery-state.ts';
import { WORKSPACE, batteryOf, catalogModel, memoryBattery } from '../../support/battery-ports.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';
const signal = () => new AbortController().signal;

const TWO_TASKS = `
name: basics
specialist: rust
workspace: ${WORKSPACE}
models: [${ALPHA}, ${BETA}]
tasks:
  - id: contains
    task: "Add Region::contains_point"
    expect: { commands: [cargo test] }
  - id: len
    task: "Add Region::len"
`;

async function rejection(promise: Promise<unknown>): Promise<FabricError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(FabricError);
  return error as FabricError;
}

const byPlace = (a: CellResult, b: CellResult) =>
  `${a.task}/${a.model}/${a.repeat}`.localeCompare(`${b.task}/${b.model}/${b.repeat}`);

describe('a battery session: its plan', () => {
  it('plans every task with every model, `repeat` times, in the canonical workspace', async () => {
    const { ports } = memoryBattery({ catalog: [catalogModel(ALPHA), catalogModel(BETA)] });
    const battery = batteryOf(`${TWO_TASKS}repeat: 2\nmax_steps: 7\n`);
    const session = await BatterySession.open(ports, { battery, signal: signal() });
    expect(session.plan).toMatchObject({
      name: 'basics',
      specialist: 'rust',
      workspace: `${WORKSPACE}.real`,
      models: [ALPHA, BETA],
      repeat: 2,
      maxSteps: 7,
    });
    expect(session.plan.id).toMatch(/^bat-20260301T100001Z-[0-9a-f]{6}$/);
    expect(session.pending()).toHaveLength(2 * 2 * 2);
    expect(session.concurrency).toBe(1);
    expect(session.status).toBe('running');
    expect(session.statePath).toBe(`memory:batteries/${session.plan.id}`);
  });

  it('takes --models over the file, without duplicates, and `available` as every tool-capable model', async () => {
    const { ports } = memoryBattery({
      catalog: [
        catalogModel(ALPHA),
        catalogModel('lab/embed', { type: 'embedding' }),
        catalogModel('lab/no-tools', { toolUse: false }),
        catalogModel(BETA),
      ],
      // A hosted model is compared when named, never taken in by `available` (local first).
      hosted: [catalogModel('gpt-5', { backend: 'openai', baseUrl: 'https://api.test' })],
      servers: 3,
    });
    const listed = await BatterySession.open(ports, {
      battery: batteryOf(TWO_TASKS),
      models: [BETA, BETA, 'lab/no-tools', 'gpt-5'],
      signal: signal(),
    });
    expect(listed.plan.models).toEqual([BETA, 'lab/no-tools', 'gpt-5']);
    expect(listed.concurrency).toBe(3);
    const available = await BatterySession.open(ports, {
      battery: batteryOf(TWO_TASKS),
      models: 'available',
      signal: signal(),
    });
    expect(available.plan.models).toEqual([ALPHA, BETA]);
  });

  it('refuses a file that does not fit the config before anything runs (config_invalid)', async () => {
    const memory = memoryBattery();
    const unknown = await rejection(
      BatterySession.open(memory.ports, {
        battery: batteryOf(TWO_TASKS.replace('specialist: rust', 'specialist: nobody')),
        signal: signal(),
      }),
    );
    expect(unknown.code).toBe('config_invalid');
    expect(unknown.message).toContain('no specialist "nobody" in /mem/fabric.yaml (configured: rust, units)');
    const refused = await rejection(
      BatterySession.open(memory.ports, {
        battery: batteryOf(TWO_TASKS.replace('[cargo test]', '[cargo run]').replace(WORKSPACE, '/mem/gone')),
        signal: signal(),
      }),
    );
    expect(refused.code).toBe('config_invalid');
    expect(refused.message).toContain('/mem/gone does not exist');
    expect(refused.message).toContain(
      '`cargo run` is not allowlisted. (specialist "rust" allows: cargo test',
    );
    expect(refused.message).not.toContain('more detail');
    expect(memory.runs).toEqual([]);
    expect(await memory.states.ids()).toEqual([]);
  });
});

describe('a battery session: running and its state', () => {
  it('runs each cell as a tagged run in its own workspace copy, checks it, and keeps its state after every cell', async () => {
    const memory = memoryBattery({
      catalog: [catalogModel(ALPHA), catalogModel(BETA)],
      failing: ['cargo test'],
      script: (model) => (model === BETA ? { status: 'max_steps', steps: 30 } : { status: 'succeeded' }),
    });
    const session = await BatterySession.open(memory.ports, {
      battery: batteryOf(TWO_TASKS),
      signal: signal(),
    });
    const started: string[] = [];
    const ended: CellResult[] = [];
    const outcome = await session.run(signal(), {
      onCellStart: (cell) => started.push(`${cell.task}/${cell.model}`),
      onCellEnd: (result) => ended.push(result),
    });
    expect(outcome.interrupted).toBe(false);
    expect(session.status).toBe('done');
    // Model after model (each model loads once), though the plan lists task after task.
    expect(started).toEqual([`contains/${ALPHA}`, `len/${ALPHA}`, `contains/${BETA}`, `len/${BETA}`]);
    expect(ended.map((cell) => [cell.task, cell.model, cell.status, cell.passed, cell.failed_check])).toEqual(
      [
        ['contains', ALPHA, 'succeeded', false, 'command: cargo test'],
        ['len', ALPHA, 'succeeded', true, null],
        ['contains', BETA, 'max_steps', false, 'status'],
        ['len', BETA, 'max_steps', false, 'status'],
      ],
    );
    // Every run is tagged with its battery and cell, in a copy of its own, removed afterwards.
    const id = session.plan.id;
    expect(memory.runs.map((run) => run.tags)).toContainEqual({
      battery: id,
      task: 'len',
      model: BETA,
      repeat: '1',
    });
    expect(memory.runs.every((run) => run.specialist === 'rust')).toBe(true);
    const [copies] = memory.workspaces;
    expect(copies?.prepared).toHaveLength(4);
    expect(memory.runs.map((run) => run.workspace)).toEqual(copies?.prepared);
    expect(copies?.prepared.every((path) => path.startsWith(`${WORKSPACE}.real#`))).toBe(true);
    expect(copies?.present()).toEqual([]);
    expect(copies?.closed).toBe(true);
    // The checks ran in the cell's copy, and only where the run ended as expected.
    expect(memory.checks.asked.map((asked) => asked.workspace)).toEqual([copies?.prepared[0]]);
    // The state: written before the first cell, after each one, and at the end.
    expect(memory.states.saved.map((state) => [state.status, state.cells.length])).toEqual([
      ['running', 0],
      ['running', 1],
      ['running', 2],
      ['running', 3],
      ['running', 4],
      ['done', 4],
    ]);
    // The state keeps the cells in the order they ended; the outcome lists them as the plan does.
    const kept = await memory.states.read(id);
    expect(kept.cells).toEqual(ended);
    expect([...kept.cells].sort(byPlace)).toEqual([...outcome.results].sort(byPlace));
    expect(session.summary().models).toEqual([
      expect.objectContaining({ model: ALPHA, passed: 1, total: 2 }),
      expect.objectContaining({ model: BETA, passed: 0, total: 2 }),
    ]);
  });

  it('expands a model alias the one way before asking the backends, and refuses a missing model before any cell runs', async () => {
    const memory = memoryBattery({
      catalog: [catalogModel(ALPHA)],
      aliases: { coder: ALPHA, ghost: 'lab/ghost-1b' },
    });
    const refused = await rejection(
      BatterySession.open(memory.ports, {
        battery: batteryOf(TWO_TASKS),
        models: ['coder', 'ghost'],
        signal: signal(),
      }),
    );
    expect(refused.code).toBe('model_not_found');
    expect(refused.message).toContain(
      'The battery names 1 model (from --models) that no answering server lists, so no cell ran: "ghost" (alias of "lab/ghost-1b").',
    );
    expect(refused.message).toContain(`lm_studio http://lm.test:1234: ${ALPHA}`);
    expect(memory.runs).toEqual([]);
    const session = await BatterySession.open(memory.ports, {
      battery: batteryOf(TWO_TASKS),
      models: ['coder'],
      signal: signal(),
    });
    const { results } = await session.run(signal());
    expect(results.map((cell) => cell.status)).toEqual(['succeeded', 'succeeded']);
    // Only the usable model's cells ran; the run is asked for the name the battery gives.
    expect(memory.runs.map((run) => run.model)).toEqual(['coder', 'coder']);
  });

  it('runs at most `concurrency` cells at once', async () => {
    const memory = memoryBattery({ catalog: [catalogModel(ALPHA), catalogModel(BETA)], runMs: 20 });
    const session = await BatterySession.open(memory.ports, {
      battery: batteryOf(`${TWO_TASKS}repeat: 2\n`),
      concurrency: 3,
      signal: signal(),
    });
    const { results } = await session.run(signal());
    expect(results).toHaveLength(8);
    expect(memory.maxInFlight()).toBe(3);
  });

  it('stops at Ctrl-C: the cell it stopped is not recorded, and the battery is interrupted and resumable', async () => {
    const controller = new AbortController();
    const memory = memoryBattery({
      catalog: [catalogModel(ALPHA), catalogModel(BETA)],
      onRun: (request) => {
        if (request.model === BETA) controller.abort();
      },
    });
    const session = await BatterySession.open(memory.ports, {
      battery: batteryOf(TWO_TASKS),
      signal: signal(),
    });
    const outcome = await session.run(controller.signal);
    expect(outcome.interrupted).toBe(true);
    expect(session.status).toBe('interrupted');
    expect(outcome.results.map((cell) => `${cell.task}/${cell.model}`)).toEqual([
      `contains/${ALPHA}`,
      `len/${ALPHA}`,
    ]);
    const state = await memory.states.read(session.plan.id);
    expect(state.status).toBe('interrupted');
    expect(state.cells).toHaveLength(2);
    const notDone = session.summary().cells.filter((cell) => cell.status === 'not_run');
    expect(notDone).toHaveLength(2);
    expect(notDone[0]?.error).toContain(`fabric battery --resume ${session.plan.id}`);
  });
});

describe('a battery session: resuming', () => {
  /** A battery of two tasks × two models: one cell passed, one could not run (a missing model). */
  function stored(): BatteryState {
    const cell = (task: string, model: string, fields: Partial<CellResult>): CellResult => ({
      task,
      model,
      repeat: 1,
      status: 'succeeded',
      passed: true,
      failed_check: null,
      error: null,
      run_id: `run-${task}-${model}`,
      steps: 4,
      tokens: 100,
      seconds: 2,
      checks: [],
      started_at: '2026-02-01T10:00:00.000Z',
      ended_at: '2026-02-01T10:00:02.000Z',
      ...fields,
    });
    return {
      version: 1,
      plan: {
        id: 'bat-20260201T100000Z-abc123',
        name: 'basics',
        specialist: 'rust',
        workspace: WORKSPACE,
        models: [ALPHA, BETA],
        repeat: 1,
        maxSteps: undefined,
        tasks: [
          {
            id: 'contains',
            task: 'Add contains',
            expect: { status: 'succeeded', commands: [], files_contain: {} },
          },
          { id: 'len', task: 'Add len', expect: { status: 'succeeded', commands: [], files_contain: {} } },
        ],
      },
      file: '/mem/battery.yaml',
      status: 'interrupted',
      created_at: '2026-02-01T10:00:00.000Z',
      updated_at: '2026-02-01T10:00:05.000Z',
      cells: [
        cell('contains', ALPHA, {}),
        cell('contains', BETA, {
          status: 'not_run',
          passed: false,
          failed_check: 'run',
          error: 'No backend has the model',
          run_id: null,
        }),
      ],
    };
  }

  it('runs only the cells not done, tries again those that could not run, and keeps the id', async () => {
    const states = new MemoryBatteryStates([stored()]);
    const memory = memoryBattery({ states, catalog: [catalogModel(ALPHA), catalogModel(BETA)] });
    const session = await BatterySession.open(memory.ports, {
      resume: 'bat-20260201T100000Z-abc123',
      signal: signal(),
    });
    expect(session.plan.id).toBe('bat-20260201T100000Z-abc123');
    expect(session.file).toBe('/mem/battery.yaml');
    expect(session.pending()).toEqual([
      { task: 'contains', model: BETA, repeat: 1 },
      { task: 'len', model: ALPHA, repeat: 1 },
      { task: 'len', model: BETA, repeat: 1 },
    ]);
    const summaryBefore = session.summary();
    expect(summaryBefore.cells.find((cell) => cell.task === 'contains' && cell.model === ALPHA)?.run_id).toBe(
      'run-contains-lab/alpha-7b',
    );
    const outcome = await session.run(signal());
    // Beta's cells first (the first model with a cell left), then alpha's.
    expect(memory.runs.map((run) => `${run.tags?.task}/${run.model}`)).toEqual([
      `contains/${BETA}`,
      `len/${BETA}`,
      `len/${ALPHA}`,
    ]);
    expect(outcome.results.map((cell) => [cell.task, cell.model, cell.status])).toEqual([
      ['contains', ALPHA, 'succeeded'],
      ['contains', BETA, 'succeeded'],
      ['len', ALPHA, 'succeeded'],
      ['len', BETA, 'succeeded'],
    ]);
    const state = await states.read('bat-20260201T100000Z-abc123');
    expect(state.status).toBe('done');
    expect(state.created_at).toBe('2026-02-01T10:00:00.000Z');
    // The cell that had not run is replaced, not kept beside its retry.
    expect(state.cells).toHaveLength(4);
    expect(state.cells.filter((cell) => cell.status === 'not_run')).toEqual([]);
  });

  it('refuses --models on a resume, and an unknown id (run_not_found)', async () => {
    const memory = memoryBattery({ states: new MemoryBatteryStates([stored()]) });
    const models = await rejection(
      BatterySession.open(memory.ports, {
        resume: 'bat-20260201T100000Z-abc123',
        models: [ALPHA],
        signal: signal(),
      }),
    );
    expect(models.code).toBe('usage');
    const unknown = await rejection(
      BatterySession.open(memory.ports, { resume: 'bat-nope', signal: signal() }),
    );
    expect(unknown.code).toBe('run_not_found');
    expect(memory.runs).toEqual([]);
  });
});

import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { BatteryState } from '../../../src/application/battery/battery-types.ts';
import { PostgresControlStore } from '../../../src/infrastructure/control/postgres-control-store.ts';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { EXAMPLE_PACK, makeSandbox, type Sandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type FakeModel, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { closedPort, createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { makeFabric, postJson, readSse, type RunningApi, type SseFrame, startApi } from './http-harness.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';
const GHOST = 'lab/ghost-1b';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  sandbox: Sandbox;
  servers: FakeLlmServer[];
  /** The first server's catalog: a test may load a model into it as the battery goes. */
  firstModels: FakeModel[];
  fabric: Fabric;
  api: RunningApi;
}

/** alpha is loaded on the first server, beta on the second; each model on its server only. */
async function setup(
  options: {
    respond?: Parameters<typeof startFakeLlmServer>[0]['respond'];
    control?: Record<string, unknown>;
  } = {},
): Promise<Setup> {
  const sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
    specialists: {
      units: {
        builder: `${EXAMPLE_PACK}#buildPack`,
        description: 'unit conversions',
        sandbox: { allowed_commands: ['grep'], timeout_s: 30 },
      },
    },
    ...(options.control === undefined ? {} : { control: options.control }),
  });
  cleanups.push(() => sandbox.cleanup());
  const respond = options.respond ?? unitsResponder(() => 'converts');
  const firstModels: FakeModel[] = [{ id: ALPHA, toolUse: true, loaded: true }];
  const servers = [
    await startFakeLlmServer({ flavor: 'lm_studio', respond, models: firstModels }),
    await startFakeLlmServer({
      flavor: 'lm_studio',
      respond,
      models: [{ id: BETA, toolUse: true, loaded: true }],
    }),
  ];
  cleanups.push(async () => {
    await Promise.all(servers.map((server) => server.stop()));
  });
  const workspace = join(sandbox.dir, 'ws');
  await mkdir(workspace, { recursive: true });
  await writeFile(join(workspace, 'notes.txt'), 'distances in km\n');
  const fabric = await makeFabric(sandbox, servers.map((server) => server.url).join(','));
  cleanups.push(() => fabric.close());
  const api = await startApi(fabric);
  cleanups.push(() => api.stop());
  return { sandbox, servers, firstModels, fabric, api };
}

function batteryYaml(fields: Record<string, unknown> = {}): string {
  return stringify({
    name: 'units-basics',
    specialist: 'units',
    workspace: './ws',
    models: [ALPHA, BETA],
    tasks: [
      {
        id: 'km-to-mi',
        task: 'Convert 3 km to miles',
        expect: { commands: ['grep -q km notes.txt'], files_contain: { 'notes.txt': 'km' } },
      },
      { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
    ],
    ...fields,
  });
}

async function start(s: Setup, body: Record<string, unknown>): Promise<string> {
  const response = await postJson(`${s.api.url}/v1/batteries`, { base_dir: s.sandbox.dir, ...body });
  if (response.status !== 202)
    throw new Error(`POST /v1/batteries: ${response.status} ${await response.text()}`);
  const started = (await response.json()) as { id: string; links: { self: string; events: string } };
  expect(response.headers.get('location')).toBe(started.links.self);
  return started.id;
}

async function streamToEnd(s: Setup, id: string, lastEventId?: string): Promise<SseFrame[]> {
  const headers: Record<string, string> = lastEventId === undefined ? {} : { 'last-event-id': lastEventId };
  const response = await fetch(`${s.api.url}/v1/batteries/${id}/events`, { headers });
  expect(response.headers.get('content-type')).toContain('text/event-stream');
  return readSse(response);
}

interface Cell {
  task: string;
  model: string;
  status: string;
  passed: boolean;
  error: string | null;
  run_id: string | null;
}

async function getBattery(s: Setup, id: string) {
  const response = await fetch(`${s.api.url}/v1/batteries/${id}`);
  expect(response.status).toBe(200);
  return (await response.json()) as {
    id: string;
    name: string;
    status: string;
    cells: Cell[];
    models: { model: string; passed: number; total: number; infrastructure_failures: number }[];
  };
}

async function readState(s: Setup, id: string): Promise<BatteryState> {
  return JSON.parse(
    await readFile(join(s.sandbox.runsDir, 'batteries', `${id}.json`), 'utf8'),
  ) as BatteryState;
}

describe('POST /v1/batteries', () => {
  it('runs a battery, streams its cells as they end, serves its result and writes its rows to the control plane', async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.drop());
    let s: Setup | undefined;
    // The ghost model, listed but not loaded on the first server (a model no server lists is
    // refused before any cell runs), is loaded there while the battery runs (beta's second task):
    // the backends are asked again before each cell, so its cells, which run after beta's, find it loaded.
    const converts = unitsResponder(() => 'converts');
    s = await setup({
      control: { enabled: true, dsn: database.dsn },
      respond: (request) => {
        const task = request.messages.find((m) => m.role === 'user')?.content ?? '';
        const ghost = s?.firstModels.find((m) => m.id === GHOST);
        if (request.model === BETA && task.includes('feet') && ghost !== undefined) ghost.loaded = true;
        return converts(request);
      },
    });
    s.firstModels.push({ id: GHOST, toolUse: true, loaded: false });
    const id = await start(s, { battery: batteryYaml(), models: [ALPHA, BETA, GHOST], concurrency: 1 });
    const frames = await streamToEnd(s, id);
    const kinds = frames.map((frame) => frame.event);
    expect(kinds.filter((kind) => kind === 'cell_start')).toHaveLength(6);
    expect(kinds.filter((kind) => kind === 'cell_end')).toHaveLength(6);
    expect(kinds.at(-1)).toBe('battery_end');
    expect(frames.map((frame) => Number(frame.id))).toEqual(frames.map((_, i) => i + 1));
    const end = JSON.parse(frames.at(-1)!.data) as { status: string; result: { cells: Cell[] } };
    expect(end.status).toBe('done');

    const battery = await getBattery(s, id);
    expect(battery).toMatchObject({ id, name: 'units-basics', status: 'done' });
    expect(battery.cells).toEqual(end.result.cells);
    const cell = (task: string, model: string) =>
      battery.cells.find((c) => c.task === task && c.model === model)!;
    for (const model of [ALPHA, BETA]) {
      expect(cell('km-to-mi', model)).toMatchObject({ status: 'succeeded', passed: true });
      expect(cell('ft-to-m', model)).toMatchObject({ status: 'succeeded', passed: true });
    }
    expect(cell('km-to-mi', GHOST)).toMatchObject({ status: 'succeeded', passed: true });
    expect(cell('ft-to-m', GHOST)).toMatchObject({ status: 'succeeded', passed: true });
    expect(s.servers[0]!.chatRequests().some((r) => (r.body as { model: string }).model === GHOST)).toBe(
      true,
    );

    // The stream resumes after the last event a client had.
    const resumed = await streamToEnd(s, id, '10');
    expect(resumed.map((frame) => frame.id)).toEqual(['11', '12', '13']);

    const list = (await (await fetch(`${s.api.url}/v1/batteries`)).json()) as { batteries: { id: string }[] };
    expect(list.batteries[0]).toMatchObject({ id, status: 'done', cells_done: 6, cells_total: 6 });

    // The control plane has the battery and a row per cell, as the state file does.
    const store = new PostgresControlStore(database.dsn);
    try {
      expect(await store.battery(id)).toMatchObject({ id, status: 'done', models: [ALPHA, BETA, GHOST] });
      const rows = await store.batteryCells(id);
      expect(rows).toHaveLength(6);
      for (const c of battery.cells) {
        expect(rows.find((r) => r.task === c.task && r.model === c.model)).toMatchObject({
          status: c.status,
          passed: c.passed,
          run_id: c.run_id,
        });
      }
    } finally {
      await store.close();
    }
  });

  it('answers a bad body or battery with 400 and field errors, and an unknown battery with 404', async () => {
    const s = await setup();
    const post = async (body: unknown) => {
      const response = await postJson(`${s.api.url}/v1/batteries`, body);
      return {
        status: response.status,
        body: (await response.json()) as {
          error: { code: string; issues?: { path: string; message: string }[] };
        },
      };
    };
    const missing = await post({});
    expect(missing.status).toBe(400);
    expect(missing.body.error.issues).toContainEqual({
      path: 'battery',
      expected: 'a value (it is required)',
      found: 'nothing',
      message: 'battery: expected a value (it is required), found nothing.',
    });

    const relative = await post({ battery: batteryYaml(), base_dir: 'here', concurrency: 0 });
    expect(relative.status).toBe(400);
    expect(relative.body.error.issues?.map((issue) => issue.path).sort()).toEqual([
      'base_dir',
      'concurrency',
    ]);

    const duplicate = await post({
      battery: batteryYaml({
        tasks: [
          { id: 'a', task: 'x' },
          { id: 'a', task: 'y' },
        ],
      }),
      base_dir: s.sandbox.dir,
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.error.issues).toEqual([
      {
        path: 'battery.tasks[1].id',
        message: expect.stringMatching(/already the id of tasks\[0\].*\(line \d+\)/),
      },
    ]);

    // As a JSON object, checked against the config: the specialist and the workspace.
    const unknown = await post({
      battery: { name: 'x', specialist: 'nobody', tasks: [{ id: 'a', task: 'x' }] },
      base_dir: s.sandbox.dir,
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.issues?.[0]?.path).toBe('battery.specialist');
    // All of a body's problems at once (issue 20): the specialist the config lacks beside a duplicate id.
    const both = await post({
      battery: {
        name: 'x',
        specialist: 'nobody',
        workspace: './missing',
        tasks: [
          { id: 'a', task: 'x' },
          { id: 'a', task: 'y' },
        ],
      },
      base_dir: s.sandbox.dir,
    });
    expect(both.status).toBe(400);
    expect(both.body.error.issues?.map((issue) => issue.path).sort()).toEqual([
      'battery.specialist',
      'battery.tasks[1].id',
      'battery.workspace',
    ]);
    const nowhere = await post({ battery: batteryYaml({ workspace: './missing' }), base_dir: s.sandbox.dir });
    expect(nowhere.status).toBe(400);
    expect(nowhere.body.error.issues?.[0]).toMatchObject({ path: 'battery.workspace' });
    expect(nowhere.body.error.issues?.[0]?.message).toContain('does not exist');

    expect(s.servers.flatMap((server) => server.chatRequests())).toHaveLength(0);
    for (const path of ['bat-nope', 'bat-nope/events', '..%2Fetc']) {
      expect((await fetch(`${s.api.url}/v1/batteries/${path}`)).status).toBe(404);
    }
  });
});

describe('faults while a battery runs over HTTP', () => {
  it('fails the cells of a server that dies as infrastructure failures, not the model’s, and the battery goes on and ends (a dead control store too)', async () => {
    let s: Setup | undefined;
    const converts = unitsResponder(() => 'converts');
    s = await setup({
      // A control store that cannot be reached never fails the battery.
      control: { enabled: true, dsn: `postgres://postgres@127.0.0.1:${await closedPort()}/none` },
      respond: (request) => {
        const task = request.messages.find((m) => m.role === 'user')?.content ?? '';
        if (request.model === BETA && task.includes('feet')) {
          // The second server dies in the middle of answering.
          void s!.servers[1]!.stop();
          return { ...converts(request), delayMs: 2000 };
        }
        return converts(request);
      },
    });
    const tasks = [
      { id: 'km-to-mi', task: 'Convert 3 km to miles' },
      { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
      { id: 'mi-to-km', task: 'Convert 2 miles to km' },
    ];
    const id = await start(s, { battery: batteryYaml({ tasks }), concurrency: 1 });
    const frames = await streamToEnd(s, id);
    expect(JSON.parse(frames.at(-1)!.data)).toMatchObject({ kind: 'battery_end', status: 'done' });
    const battery = await getBattery(s, id);
    const cell = (task: string, model: string) =>
      battery.cells.find((c) => c.task === task && c.model === model)!;
    for (const task of tasks) expect(cell(task.id, ALPHA)).toMatchObject({ passed: true });
    expect(cell('km-to-mi', BETA)).toMatchObject({ passed: true });
    expect(cell('ft-to-m', BETA).passed).toBe(false);
    // Its run was cut when the server died; tried twice more, it found no server at all.
    expect(cell('ft-to-m', BETA)).toMatchObject({ failed_check: 'run', infrastructure: true });
    expect(cell('ft-to-m', BETA).error).toMatch(/No backend has the model .*\(down\)/);
    const kept = (await readState(s, id)).cells.find((c) => c.task === 'ft-to-m' && c.model === BETA);
    expect(kept?.attempts).toBe(3);
    expect(cell('mi-to-km', BETA)).toMatchObject({ status: 'not_run', passed: false, infrastructure: true });
    expect(cell('mi-to-km', BETA).error).toMatch(/No backend has the model .*\(down\)/);
    // Beta's score counts only the cell its server answered.
    expect(battery.models.find((m) => m.model === BETA)).toMatchObject({
      passed: 1,
      total: 1,
      pass_rate: 1,
      infrastructure_failures: 2,
    });
    expect((await readState(s, id)).status).toBe('done');
  });

  it('cancels a battery on shutdown: cells not done are not recorded, and the battery resumes', async () => {
    const s = await setup({ respond: unitsResponder(() => 'converts', { delayMs: 150 }) });
    const id = await start(s, { battery: batteryYaml(), concurrency: 1 });
    const response = await fetch(`${s.api.url}/v1/batteries/${id}/events`);
    const firstEnd = readSse(response, (frame) => frame.event === 'cell_end');
    await firstEnd;
    await s.api.stop();
    const state = await readState(s, id);
    expect(state.status).toBe('interrupted');
    expect(state.cells.length).toBeGreaterThanOrEqual(1);
    expect(state.cells.length).toBeLessThan(4);
    // A cell whose run the shutdown cancelled is not done: no cell is recorded as cancelled.
    expect(state.cells.every((cell) => cell.status === 'succeeded')).toBe(true);

    // Resumed (here in a new server's process), it runs only what was left.
    const { openBattery } = await import('../../../src/composition/battery.ts');
    const session = await openBattery(s.fabric, { resume: id, signal: new AbortController().signal });
    expect(session.pending().length).toBe(4 - state.cells.length);
    const outcome = await session.run(new AbortController().signal);
    expect(outcome.interrupted).toBe(false);
    expect(outcome.results.every((cell) => cell.passed)).toBe(true);
    expect((await readState(s, id)).status).toBe('done');
  });
});

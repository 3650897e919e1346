import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';

let sandbox: Sandbox;
let server: FakeLlmServer;

beforeEach(async () => {
  sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
  });
});

afterEach(async () => {
  await server.stop();
  await sandbox.cleanup();
});

describe('a battery on one LM Studio server with JIT loading and Auto-Evict', () => {
  it('runs model after model, so each model loads once, and still shows task × model', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      jitAutoEvict: true,
      respond: unitsResponder(() => 'converts'),
      models: [
        { id: ALPHA, toolUse: true, loaded: false },
        { id: BETA, toolUse: true, loaded: false },
      ],
    });
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-order',
        specialist: 'units',
        models: [ALPHA, BETA],
        tasks: [
          { id: 'km-to-mi', task: 'Convert 3 km to miles' },
          { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
          { id: 'mi-to-km', task: 'Convert 2 miles to km' },
        ],
      }),
    );
    const result = await spawnFabric(['battery', file, '--json'], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(0);
    const models = server.chatRequests().map((request) => (request.body as { model: string }).model);
    const switches = models.filter((model, i) => i > 0 && model !== models[i - 1]).length;
    expect(models[0]).toBe(ALPHA);
    expect(switches).toBe(1);
    expect(server.loads().map((load) => load.model)).toEqual([ALPHA, BETA]);
    // The result is still listed task after task, each with every model.
    const json = JSON.parse(result.stdout) as { cells: { task: string; model: string; passed: boolean }[] };
    expect(json.cells.map((cell) => `${cell.task} ${cell.model}`)).toEqual([
      `km-to-mi ${ALPHA}`,
      `km-to-mi ${BETA}`,
      `ft-to-m ${ALPHA}`,
      `ft-to-m ${BETA}`,
      `mi-to-km ${ALPHA}`,
      `mi-to-km ${BETA}`,
    ]);
    expect(json.cells.every((cell) => cell.passed)).toBe(true);
  });
});

describe('a battery with a target window on LM Studio', () => {
  it('loads each model at the same window, records it per cell, and unloads after its cells only what it loaded', async () => {
    const GAMMA = 'lab/gamma-7b';
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      respond: unitsResponder(() => 'converts'),
      models: [
        { id: ALPHA, toolUse: true, loaded: false, maxContextLength: 32768 },
        { id: BETA, toolUse: true, loaded: false, maxContextLength: 32768 },
        // Loaded by hand at the same window: used as it is, never unloaded by the battery.
        { id: GAMMA, toolUse: true, loaded: true, contextLength: 16384 },
      ],
    });
    await sandbox.cleanup();
    sandbox = await makeSandbox({
      llm: {
        retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 },
        probe_timeout_ms: 5000,
        context_length: 16384,
      },
    });
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-window',
        specialist: 'units',
        models: [ALPHA, BETA, GAMMA],
        tasks: [
          { id: 'km-to-mi', task: 'Convert 3 km to miles' },
          { id: 'ft-to-m', task: 'Convert 10 feet to metres' },
        ],
      }),
    );
    const result = await spawnFabric(['battery', file, '--json'], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    expect(result.exitCode).toBe(0);
    // Each model the battery loaded, loaded once at the target, and unloaded before the next one.
    const managed = server.requests
      .filter((request) => request.path === '/api/v1/models/load' || request.path === '/api/v1/models/unload')
      .map((request) => {
        const body = request.body as { model?: string; instance_id?: string; context_length?: number };
        return request.path.endsWith('/load')
          ? `load ${body.model} ${body.context_length}`
          : `unload ${body.instance_id}`;
      });
    expect(managed).toEqual([
      `load ${ALPHA} 16384`,
      `unload ${ALPHA}`,
      `load ${BETA} 16384`,
      `unload ${BETA}`,
    ]);
    expect(server.unloads()).toEqual([ALPHA, BETA]);
    const json = JSON.parse(result.stdout) as {
      cells: { model: string; passed: boolean; window_tokens: number | null }[];
      models: { model: string; windows: number[] }[];
    };
    expect(json.cells.every((cell) => cell.passed && cell.window_tokens === 16384)).toBe(true);
    expect(json.models.map((model) => [model.model, model.windows])).toEqual([
      [ALPHA, [16384]],
      [BETA, [16384]],
      [GAMMA, [16384]],
    ]);
  });
});

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { startFakeKeyed, startFakeLlamaServer } from '../../support/fake-llm-compat.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/**
 * Issue 27: a battery's `models:` may name a model on any backend — LM Studio, a llama-server, a
 * hosted endpoint — and `models: available` takes the local ones only (local first).
 */
const LOCAL = 'lab/alpha-7b';
const LLAMA = 'qwen3-coder.gguf';
const HOSTED = 'gpt-5';
const KEY = 'sk-battery-KEY-55554444';

describe('fabric battery across backends', () => {
  const servers: FakeLlmServer[] = [];
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
    await sandbox?.cleanup();
  });

  async function setUp() {
    const respond = unitsResponder(() => 'converts');
    const lm = await startFakeLlmServer({
      flavor: 'lm_studio',
      respond,
      models: [{ id: LOCAL, toolUse: true }],
    });
    const llama = await startFakeLlamaServer({ model: { id: LLAMA }, respond });
    const hosted = await startFakeKeyed({ key: KEY, modelIds: [HOSTED], respond });
    servers.push(lm, llama, hosted);
    sandbox = await makeSandbox({
      llm: {
        retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
        probe_timeout_ms: 5000,
        backends: [
          { kind: 'llama_cpp', url: llama.url },
          { kind: 'openai', url: hosted.url, api_key_env: 'BATTERY_KEY' },
        ],
      },
      specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' } },
    });
    const workspace = join(sandbox.dir, 'ws');
    await mkdir(workspace, { recursive: true });
    await writeFile(join(workspace, 'notes.txt'), 'km\n');
    return { lm, llama, hosted, sandbox };
  }

  async function battery(sandbox: Sandbox, lmUrl: string, models: unknown) {
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'across',
        specialist: 'units',
        workspace: './ws',
        models,
        tasks: [{ id: 'km', task: 'Convert 3 km to miles', expect: { status: 'succeeded' } }],
      }),
    );
    const out = await spawnFabric(['battery', file, '--json'], {
      env: testEnv(sandbox, lmUrl, { BATTERY_KEY: KEY }),
      cwd: sandbox.dir,
    });
    return { ...out, json: JSON.parse(out.stdout) as { cells: { model: string; passed: boolean }[] } };
  }

  it('compares models named on LM Studio, llama-server and a hosted endpoint; available takes the local ones', async () => {
    const { lm, llama, hosted, sandbox } = await setUp();
    const named = await battery(sandbox, lm.url, [LOCAL, LLAMA, HOSTED]);
    expect(named.exitCode, named.stderr).toBe(0);
    expect(named.json.cells.map((c) => [c.model, c.passed])).toEqual([
      [LOCAL, true],
      [LLAMA, true],
      [HOSTED, true],
    ]);
    expect(lm.chatRequests().length).toBeGreaterThan(0);
    expect(llama.chatRequests().length).toBeGreaterThan(0);
    const hostedCalls = hosted.chatRequests().length;
    expect(hostedCalls).toBeGreaterThan(0);
    expect(named.stdout + named.stderr).not.toContain(KEY);

    const available = await battery(sandbox, lm.url, 'available');
    expect(available.json.cells.map((c) => c.model)).toEqual([LOCAL, LLAMA]);
    expect(hosted.chatRequests()).toHaveLength(hostedCalls);
  });
});

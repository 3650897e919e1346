import { afterEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/**
 * SPEC §17: a run stays on the server it started on, so that server's prompt cache serves every
 * turn; with the model loaded on two LM Studio servers, the requests used to alternate.
 */
const STEPS = 6;
const script = (): ScriptedTurn[] => [
  ...Array.from({ length: STEPS }, (_, i) => ({
    reply: { toolCalls: [{ name: 'convert_units', arguments: { value: i + 1, from: 'km', to: 'm' } }] },
  })),
  { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '6000 m' } }] } },
];

describe('a run on a model loaded on two LM Studio servers', () => {
  let servers: FakeLlmServer[] = [];
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await Promise.all(servers.map((server) => server.stop()));
    servers = [];
    await sandbox?.cleanup();
  });

  it('sends every request of the run to the server it started on', async () => {
    const model = { id: 'qwen/qwen3-coder-30b', toolUse: true };
    servers = [
      await startFakeLlmServer({ flavor: 'lm_studio', models: [model], script: script() }),
      await startFakeLlmServer({ flavor: 'lm_studio', models: [model], script: script() }),
    ];
    sandbox = await makeSandbox();
    const out = await runFabricInProcess(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'convert'],
      { env: testEnv(sandbox, servers.map((server) => server.url).join(',')), cwd: sandbox.dir },
    );
    const result = JSON.parse(out.stdout) as RunResult;
    expect(result.status, out.stderr).toBe('succeeded');
    const counts = servers.map((server) => server.chatRequests().length).sort();
    expect(counts).toEqual([0, STEPS + 1]);
  });
});

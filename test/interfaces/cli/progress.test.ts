import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EXAMPLE_PACK, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric run as a person reads it', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox({
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack` },
        research: { builder: 'builtin:research' },
      },
    });
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  async function run(args: string[], script: ScriptedTurn[]) {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script,
    });
    return spawnFabric(['run', '--config', sandbox.configPath, ...args], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
  }

  it('reports a run stopped by --max-steps 1 as stopped at the limit of 1 step, exit 3', async () => {
    const result = await run(
      ['-s', 'units', '--max-steps', '1', 'Convert 1 m'],
      [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'm', to: 'cm' } }] } },
        {
          reply: {
            toolCalls: [{ name: 'finish_task', arguments: { summary: 'Out of steps.', answer: '100 cm' } }],
          },
        },
      ],
    );
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(
      /■ max_steps: stopped at the limit of 1 step\(s\); the model reported what is left/,
    );
    expect(result.stderr).not.toContain('after 2 step(s)');
  });

  it('prints the list fields of the payload as lists, not raw JSON', async () => {
    const payload = {
      answer: 'Smithay is a Rust library.',
      findings: ['It has a DRM backend.', 'It speaks Wayland.'],
    };
    const result = await run(
      ['-s', 'research', 'What is Smithay?'],
      [{ reply: { toolCalls: [{ name: 'finish_task', arguments: payload }] } }],
    );
    expect(result.exitCode, result.stderr).toBe(0);
    // execa drops the final newline.
    expect(result.stdout).toBe(
      'answer: Smithay is a Rust library.\nfindings:\n  - It has a DRM backend.\n  - It speaks Wayland.',
    );
  });
});

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { FakeChatMessage, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';
const CONVERT = { value: 3, from: 'km', to: 'mi' };
const FINISH = { summary: 'Converted.', answer: '1.864114 mi' };

let sandbox: Sandbox;
let server: FakeLlmServer;

/**
 * Alpha writes its conversion as a Hermes text call, then finishes natively. Beta first only
 * thinks (an empty turn), then converts and finishes natively, reasoning as it goes.
 */
function respond({ model, messages }: { model: string; messages: readonly FakeChatMessage[] }): ScriptedTurn {
  const results = messages.filter((m) => m.role === 'tool').length;
  const usage = { prompt: 100 + messages.length * 10, completion: 10 };
  const finish = { reply: { toolCalls: [{ name: 'finish_task', arguments: FINISH }], usage } };
  if (model === ALPHA) {
    if (results > 0) return finish;
    return {
      reply: {
        content: `<tool_call>{"name":"convert_units","arguments":${JSON.stringify(CONVERT)}}</tool_call>`,
        usage,
      },
    };
  }
  if (results > 0) return { reply: { ...finish.reply, reasoning: 'Done, finish.', reasoningTokens: 5 } };
  const told = messages.filter((m) => m.role === 'user').length > 1;
  if (!told) return { reply: { content: '', reasoning: 'Kilometres to miles…', reasoningTokens: 50, usage } };
  return {
    reply: {
      toolCalls: [{ name: 'convert_units', arguments: CONVERT }],
      reasoning: 'Now convert.',
      reasoningTokens: 20,
      usage,
    },
  };
}

beforeEach(async () => {
  sandbox = await makeSandbox({
    llm: { retry: { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
    profiles: { 'lab/alpha*': { temperature: 0.3 } },
  });
  server = await startFakeLlmServer({
    flavor: 'lm_studio',
    respond,
    models: [
      { id: ALPHA, toolUse: true, loaded: true, contextLength: 8192 },
      { id: BETA, toolUse: true, loaded: true, contextLength: 8192 },
    ],
  });
});

afterEach(async () => {
  await server.stop();
  await sandbox.cleanup();
});

describe('a battery’s per-model facts and run checks', () => {
  it('shows each model’s profile, window, native and recovered calls, reasoning and empty turns, and checks tools, steps, time and tokens', async () => {
    const file = join(sandbox.dir, 'battery.yaml');
    await writeFile(
      file,
      stringify({
        name: 'units-facts',
        specialist: 'units',
        models: [ALPHA, BETA],
        tasks: [
          {
            id: 'km-to-mi',
            task: 'Convert 3 km to miles',
            expect: {
              tool_used: 'convert_units',
              tool_not_used: ['read_file'],
              max_steps: 2,
              max_seconds: 600,
              max_tokens: 100000,
            },
          },
          {
            id: 'km-tokens',
            task: 'Convert 3 km to miles, again',
            expect: { tool_not_used: 'convert_units', max_tokens: 10 },
          },
        ],
      }),
    );
    const result = await spawnFabric(['battery', file, '--json', '--report', 'report.md'], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    expect(result.stderr).toMatch(/battery bat-/);
    expect(result.exitCode).toBe(0);
    const json = JSON.parse(result.stdout) as {
      cells: {
        task: string;
        model: string;
        passed: boolean;
        failed_check: string | null;
        error: string | null;
      }[];
      models: Record<string, unknown>[];
    };
    const cell = (task: string, model: string) =>
      json.cells.find((c) => c.task === task && c.model === model)!;
    expect(cell('km-to-mi', ALPHA)).toMatchObject({ passed: true, failed_check: null });
    // Beta lost a step to its empty turn: three steps, over the two allowed.
    expect(cell('km-to-mi', BETA)).toMatchObject({ passed: false, failed_check: 'max_steps' });
    expect(cell('km-to-mi', BETA).error).toBe('3 steps, more than the 2 allowed');
    expect(cell('km-tokens', ALPHA)).toMatchObject({
      passed: false,
      failed_check: 'tool_not_used: convert_units',
    });
    expect(cell('km-tokens', ALPHA).error).toBe('the run called convert_units, which it must not');

    const [alpha, beta] = json.models as [Record<string, unknown>, Record<string, unknown>];
    expect(alpha).toMatchObject({
      model: ALPHA,
      native_calls: 2,
      recovered_calls: { hermes: 2 },
      reasoning_tokens: 0,
      empty_turns: 0,
      profile: ['lab/alpha*'],
      profile_settings: expect.objectContaining({ temperature: 0.3 }),
      windows: [8192],
    });
    expect(beta).toMatchObject({
      model: BETA,
      native_calls: 4,
      recovered_calls: {},
      reasoning_tokens: 150,
      empty_turns: 2,
      windows: [8192],
    });
    const report = await readFile(join(sandbox.dir, 'report.md'), 'utf8');
    expect(report).toContain('## How each model worked');
    expect(report).toContain(`| ${ALPHA} | lab/alpha* | 8192 | 2 native · 2 recovered (hermes 2) | 0 | 0 |`);
    expect(report).toMatch(new RegExp(`\\| ${BETA} \\| [^|]+ \\| 8192 \\| 4 native \\| 150 \\| 2 \\|`));
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { jsonAnswer } from '../../support/fake-llm-models.ts';
import type { FakeLlmServerOptions } from '../../support/fake-llm-types.ts';
import {
  type FakeLlmServer,
  type FakeModel,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../support/fake-llm-server.ts';
import { runUnits } from '../../support/units-run.ts';

/**
 * SPEC §17: with a target window, a model LM Studio has not loaded is loaded at it through the
 * REST API and the loaded window read back; one loaded at less is used as it is; either is said
 * once, in run_start and on stderr.
 */
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '1000 m' } }] },
};

describe('a run with a target context window on LM Studio', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  async function run(model: FakeModel, target = 16384, intercept?: FakeLlmServerOptions['intercept']) {
    sandbox = await makeSandbox({ llm: { context_length: target } });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      ...(intercept === undefined ? {} : { intercept }),
      models: [{ toolUse: true, maxContextLength: 32768, ...model }],
      script: [FINISH],
    });
    const out = await runUnits(sandbox, server, 'lm_studio');
    const loads = server.requests.filter((request) => request.path === '/api/v1/models/load');
    const start = out.events[0] as Extract<RunEvent, { kind: 'run_start' }>;
    return { ...out, loads, start };
  }

  it('loads a model that is not loaded at the target window, and reads the window back', async () => {
    const { result, loads, start, stderr } = await run({ id: 'qwen/qwen3-coder-30b', loaded: false });
    expect(result.status).toBe('succeeded');
    expect(loads.map((request) => request.body)).toEqual([
      { model: 'qwen/qwen3-coder-30b', context_length: 16384, echo_load_config: true },
    ]);
    expect(start).toMatchObject({
      window_tokens: 16384,
      window_note: 'LM Studio loaded qwen/qwen3-coder-30b at 16384 tokens.',
    });
    expect(stderr).toContain('window: LM Studio loaded qwen/qwen3-coder-30b at 16384 tokens.');
  });

  it('works in the smaller window LM Studio loaded, and says so', async () => {
    const { result, start } = await run({ id: 'qwen/qwen3-coder-30b', loaded: false, loadsAtMost: 8192 });
    expect(result.status).toBe('succeeded');
    expect(start.window_tokens).toBe(8192);
    expect(start.window_note).toMatch(
      /loaded qwen\/qwen3-coder-30b at 8192 tokens, less than the 16384 asked for/,
    );
  });

  it('uses a model already loaded at less as it is, without reloading it, and says so', async () => {
    const { result, loads, start } = await run({
      id: 'qwen/qwen3-coder-30b',
      loaded: true,
      contextLength: 4096,
    });
    expect(result.status).toBe('succeeded');
    expect(loads).toEqual([]);
    expect(start.window_tokens).toBe(4096);
    expect(start.window_note).toMatch(
      /already loaded at 4096 tokens, less than the 16384 asked for, and is used as it is/,
    );
  });

  it('says why LM Studio did not load the model at the target window, and goes on with its default', async () => {
    const refusal = 'Failed to load model: insufficient system resources';
    const { result, start } = await run({ id: 'qwen/qwen3-coder-30b', loaded: false }, 16384, (request) =>
      request.path === '/api/v1/models/load' ? jsonAnswer(500, { error: { message: refusal } }) : undefined,
    );
    expect(result.status).toBe('succeeded');
    expect(start.window_note).toBe(
      `LM Studio did not load qwen/qwen3-coder-30b at 16384 tokens (LM Studio refused: ${refusal}); it loads the model with its own default window on the first request.`,
    );
  });
});

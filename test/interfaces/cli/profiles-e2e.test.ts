import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { runUnits } from '../../support/units-run.ts';
import {
  type FakeLlmServer,
  type FakeModel,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../support/fake-llm-server.ts';

/**
 * Model profiles (SPEC §16): each request samples as the model's publisher recommends (or the
 * config says), `think` goes the way each server takes it and never to a model that does not
 * think, and the profile a run used is in its run_start.
 */
const CONVERT: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } }] },
};
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '200 cm' } }] },
};

describe('fabric run with model profiles', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;

  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  async function run(
    flavor: 'lm_studio' | 'ollama',
    model: FakeModel,
    options: { profiles?: Record<string, unknown>; script?: ScriptedTurn[] } = {},
  ) {
    sandbox = await makeSandbox(options.profiles === undefined ? {} : { profiles: options.profiles });
    server = await startFakeLlmServer({
      flavor,
      models: [{ toolUse: true, ...model }],
      script: options.script ?? [CONVERT, FINISH],
      ...(flavor === 'lm_studio' ? { lmStudioV1Api: true } : {}),
    });
    const out = await runUnits(sandbox, server, flavor);
    const bodies = server.chatRequests().map((request) => request.body as Record<string, unknown>);
    return { ...out, bodies };
  }

  it("sends a thinking Qwen3 on Ollama its publisher's sampler and think: true, and records the profile", async () => {
    const { result, events, bodies } = await run('ollama', { id: 'qwen3:8b', thinking: true });
    expect(result.status).toBe('succeeded');
    expect(bodies[0]).toMatchObject({
      think: true,
      options: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0 },
    });
    expect(events[0]).toMatchObject({
      kind: 'run_start',
      profile: {
        matched: ['*qwen3*'],
        settings: { temperature: 0.6, think: 'medium' },
        think_sent: 'medium',
      },
    });
  });

  it('sends gpt-oss on Ollama a think level, not a boolean', async () => {
    const { result, bodies } = await run('ollama', { id: 'gpt-oss:20b', thinking: true });
    expect(result.status).toBe('succeeded');
    expect(bodies[0]).toMatchObject({ think: 'medium', options: { temperature: 1, top_p: 1 } });
  });

  it('never sends think to a model that does not think, whatever the profile says', async () => {
    const { result, events, bodies } = await run(
      'ollama',
      { id: 'llama3.2:latest' },
      { profiles: { 'llama*': { think: 'high', temperature: 0.2 } } },
    );
    // The fake answers 400 "does not support thinking" as Ollama does, had it been sent.
    expect(result.status).toBe('succeeded');
    expect(bodies[0]).not.toHaveProperty('think');
    expect(bodies[0]).toMatchObject({ options: { temperature: 0.2, top_p: 0.9 } });
    const start = events[0] as Extract<RunEvent, { kind: 'run_start' }>;
    expect(start.profile?.matched).toEqual(['llama*', '*llama*3*']);
    expect(start.profile).not.toHaveProperty('think_sent');
  });

  it('lets the config override the shipped sampler, and asks LM Studio for a reasoning effort', async () => {
    const { result, bodies } = await run(
      'lm_studio',
      { id: 'qwen/qwen3-32b', thinking: true },
      { profiles: { 'qwen3*': { temperature: 0.3, think: 'high' } } },
    );
    expect(result.status).toBe('succeeded');
    expect(bodies[0]).toMatchObject({ temperature: 0.3, top_p: 0.95, top_k: 20, reasoning_effort: 'high' });
  });

  it('sends reasoning back only to a model whose profile wants it (GLM), in reasoning_content', async () => {
    const thinking: ScriptedTurn = {
      reply: { ...(CONVERT as { reply: object }).reply, reasoning: 'I convert first.' },
    };
    const glm = await run(
      'lm_studio',
      { id: 'zai-org/glm-4.6', thinking: true },
      { script: [thinking, FINISH] },
    );
    expect(glm.result.status).toBe('succeeded');
    const back = (glm.bodies[1]!.messages as Record<string, unknown>[]).find((m) => m.role === 'assistant');
    expect(back).toMatchObject({ reasoning_content: 'I convert first.' });
    await server?.stop();
    await sandbox?.cleanup();
    const qwen = await run(
      'lm_studio',
      { id: 'qwen/qwen3-32b', thinking: true },
      { script: [thinking, FINISH] },
    );
    const kept = (qwen.bodies[1]!.messages as Record<string, unknown>[]).find((m) => m.role === 'assistant');
    expect(kept).not.toHaveProperty('reasoning_content');
    expect(JSON.stringify(qwen.bodies[1])).not.toContain('I convert first.');
  });

  it('cuts a turn that thinks past the budget, and asks again once a think level lower', async () => {
    const endless: ScriptedTurn = {
      reply: { content: '', reasoning: 'Let me think about units. '.repeat(40) },
      endless: true,
    };
    const { result, events, bodies } = await run(
      'lm_studio',
      { id: 'qwen/qwen3-32b', thinking: true },
      { profiles: { 'qwen3*': { reasoning_budget: 50 } }, script: [endless, CONVERT, FINISH] },
    );
    expect(result.status).toBe('succeeded');
    expect(events.find((event) => event.kind === 'reasoning_cut')).toMatchObject({
      step: 1,
      budget_tokens: 50,
      think_before: 'medium',
      think_after: 'low',
    });
    expect(bodies.map((body) => body.reasoning_effort)).toEqual(['medium', 'low', 'medium']);
    // The cut turn asked nothing of the tools: the retry's answer is step 1's.
    expect(events.filter((event) => event.kind === 'llm_response').map((event) => event.step)).toEqual([
      1, 2,
    ]);
  });

  it('cuts an Ollama turn that thinks on in message.thinking, and asks again with think off', async () => {
    const endless: ScriptedTurn = {
      reply: { content: '', reasoning: 'Still thinking about metres. '.repeat(60) },
      endless: true,
    };
    const { result, events, bodies } = await run(
      'ollama',
      { id: 'qwen3:8b', thinking: true },
      { profiles: { 'qwen3*': { think: 'low', reasoning_budget: 40 } }, script: [endless, CONVERT, FINISH] },
    );
    expect(result.status).toBe('succeeded');
    expect(events.find((event) => event.kind === 'reasoning_cut')).toMatchObject({
      think_before: 'low',
      think_after: 'off',
    });
    // Ollama takes a boolean for qwen3: low is true, off is false.
    expect(bodies.map((body) => body.think)).toEqual([true, false, true]);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { runUnits } from '../../support/units-run.ts';
import {
  type FakeLlmServer,
  type ScriptedReply,
  type ScriptedTurn,
  startFakeLlmServer,
} from '../../support/fake-llm-server.ts';

/**
 * Thinking models as the servers of 2026 stream them (SPEC §16; shapes in
 * ../shared/research/local-model-quirks.md): the run reads the reasoning from every field and
 * tag, records it apart, and never sends it back as content or takes it as the result.
 */
const MODEL = 'qwen/qwen3-coder-30b';
/** A marker in every piece of reasoning: it must never reach a request or the payload. */
const THOUGHT = 'PRIVATE-THOUGHT';
const CONVERT = { name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } };
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '200 cm' } }] },
};

describe('fabric run with a thinking model', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;

  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  async function run(
    script: ScriptedTurn[],
    flavor: 'lm_studio' | 'ollama' = 'lm_studio',
    args: string[] = [],
  ) {
    server = await startFakeLlmServer({ flavor, models: [{ id: MODEL }], script });
    return runUnits(sandbox, server, flavor, args);
  }

  /** The run succeeded with the finish_task payload, and no reasoning went back to the model. */
  function expectClean(result: RunResult, requests = server.chatRequests()) {
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'done', answer: '200 cm' });
    for (const request of requests) expect(JSON.stringify(request.body)).not.toContain(THOUGHT);
  }

  const thinking = (
    reply: ScriptedReply,
    reasoning = `${THOUGHT}: 2 m is 200 cm, convert it.`,
  ): ScriptedTurn => ({
    reply: { ...reply, reasoning },
  });

  it.each([
    ['LM Studio, delta.reasoning_content', 'lm_studio', 'reasoning_content'],
    ['LM Studio 0.3.23+ (gpt-oss), delta.reasoning', 'lm_studio', 'reasoning'],
    ['Ollama /api/chat, message.thinking', 'ollama', undefined],
  ] as const)('reads the reasoning of %s apart from the content', async (_name, flavor, field) => {
    const { result, events } = await run(
      [
        thinking({
          toolCalls: [CONVERT],
          ...(field === undefined ? {} : { reasoningField: field }),
          reasoningTokens: 9,
        }),
        FINISH,
      ],
      flavor,
    );
    expectClean(result);
    const response = events.find((event) => event.kind === 'llm_response');
    expect(response).toMatchObject({ content: '', reasoning: `${THOUGHT}: 2 m is 200 cm, convert it.` });
    if (flavor === 'lm_studio') expect(response).toMatchObject({ reasoning_tokens: 9 });
    expect(events.find((event) => event.kind === 'tool_result')).toMatchObject({ result: '2 m = 200 cm' });
  });

  it.each([
    ['opened and closed, cut at awkward places', `<think>${THOUGHT} plan the call</think>\n\n`],
    ['closing tag only (the template opened it)', `${THOUGHT} plan the call</think>\n`],
  ])('takes <think> in the content out of the text: %s', async (_name, thought) => {
    const { result, events } = await run([
      { reply: { content: `${thought}Converting now.`, toolCalls: [CONVERT], chunkChars: 3 } },
      FINISH,
    ]);
    expectClean(result);
    expect(events.find((event) => event.kind === 'llm_response')).toMatchObject({
      content: 'Converting now.',
      reasoning: `${THOUGHT} plan the call`,
    });
  });

  it('never takes reasoning as a plain-text answer: the answer is the text after </think>', async () => {
    const { result, events } = await run([{ reply: { content: `<think>${THOUGHT}</think>It is 200 cm.` } }]);
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'It is 200 cm.' });
    expect(events.find((event) => event.kind === 'text_fallback')).toMatchObject({
      content: 'It is 200 cm.',
    });
  });

  it('tells a turn that only thought to act, and goes on', async () => {
    const { result, events } = await run([
      thinking({ content: '' }),
      { reply: { toolCalls: [CONVERT] } },
      FINISH,
    ]);
    expectClean(result);
    expect(events.some((event) => event.kind === 'text_fallback')).toBe(false);
    const second = JSON.stringify(server.chatRequests()[1]?.body);
    expect(second).toContain('You reasoned but did not act');
    expect(result.steps).toBe(3);
    // Replayed from its runlog, the think-only turn is met the same way: no differences (exit 0).
    const replay = await runFabricInProcess(
      ['replay', result.run_id, '--execute', '--config', sandbox.configPath],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(replay.stdout).toContain('no differences');
    expect(replay.exitCode).toBe(0);
  });

  it('runs a call the model wrote inside its reasoning when the content is empty', async () => {
    const { result, events } = await run([
      thinking(
        { content: '' },
        `${THOUGHT} <tool_call>{"name": "convert_units", "arguments": {"value": 2, "from": "m", "to": "cm"}}</tool_call>`,
      ),
      FINISH,
    ]);
    expectClean(result);
    expect(events.find((event) => event.kind === 'tool_call_recovered')).toMatchObject({
      format: 'hermes',
      from: 'reasoning',
    });
    expect(events.find((event) => event.kind === 'tool_result')).toMatchObject({ result: '2 m = 200 cm' });
  });

  it('does not run a tool the reasoning merely names when it was not offered', async () => {
    const { result, events } = await run([
      thinking(
        { content: '' },
        `${THOUGHT} maybe <tool_call>{"name": "shell", "arguments": {"command": "ls"}}</tool_call>`,
      ),
      FINISH,
    ]);
    expectClean(result);
    expect(events.some((event) => event.kind === 'tool_call_recovered')).toBe(false);
    expect(events.some((event) => event.kind === 'tool_call' && event.tool === 'shell')).toBe(false);
  });

  it("shows each turn's reasoning as one line on stderr, and whole with --show-reasoning", async () => {
    const long = `${THOUGHT} ${'step by step '.repeat(30)}the end`;
    const short = await run([thinking({ toolCalls: [CONVERT] }, long), FINISH]);
    const line = short.stderr.split('\n').find((text) => text.includes('∴ thought'));
    expect(line).toContain(THOUGHT);
    expect(line).toContain('…');
    expect(short.stderr).not.toContain('the end');
    await server.stop();
    const whole = await run([thinking({ toolCalls: [CONVERT] }, long), FINISH], 'lm_studio', [
      '--show-reasoning',
    ]);
    expect(whole.stderr).toContain('the end');
  });
});

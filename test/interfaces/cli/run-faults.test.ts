import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '42' } }] },
};

describe('fabric run when the model or the backend misbehaves', () => {
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
    options: { flavor?: 'lm_studio' | 'ollama'; toolUse?: boolean; args?: string[] } = {},
  ) {
    server = await startFakeLlmServer({
      flavor: options.flavor ?? 'lm_studio',
      models: [{ id: MODEL, ...(options.toolUse === undefined ? {} : { toolUse: options.toolUse }) }],
      script,
    });
    const env =
      options.flavor === 'ollama'
        ? { ...testEnv(sandbox, 'http://127.0.0.1:9'), OLLAMA_HOST: server.url }
        : testEnv(sandbox, server.url);
    const out = await runFabricInProcess(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, ...(options.args ?? []), 'task'],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    const result = JSON.parse(out.stdout) as RunResult;
    const events: RunEvent[] = result.runlog
      ? parseRunlog(await readFile(result.runlog, 'utf8'), result.runlog).events
      : [];
    return { ...out, result, events };
  }

  it('fails at once, naming what came back, when the server answers a web page instead of an event stream', async () => {
    const page: ScriptedTurn = {
      status: 200,
      body: '<!doctype html><html><head><title>Sign in</title></head><body>Proxy login</body></html>',
      contentType: 'text/html; charset=utf-8',
    };
    const { exitCode, result } = await run([page, FINISH]);
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('backend_error');
    expect(result.error?.message).toMatch(/answered 200 with text\/html instead of an event stream/);
    expect(result.error?.message).toContain('Sign in');
    expect(result.error?.message).toContain('LM_STUDIO_URL');
    // Not retried: a page stays a page.
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('reads the error of a 200 JSON answer, as LM Studio gives for a route it does not serve', async () => {
    const refusal: ScriptedTurn = {
      status: 200,
      body: { error: 'Unexpected endpoint or method. (POST /v1/chat/completions)' },
    };
    const { exitCode, result } = await run([refusal, FINISH]);
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('backend_error');
    expect(result.error?.message).toContain('Unexpected endpoint or method');
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('retries a backend that answers 503 twice, then finishes', async () => {
    const busy: ScriptedTurn = {
      status: 503,
      body: { error: 'server busy, please try again.  maximum pending requests exceeded' },
    };
    const { exitCode, result, events } = await run([busy, busy, FINISH]);
    expect(exitCode).toBe(0);
    expect(result.status).toBe('succeeded');
    const retries = events.filter((event) => event.kind === 'llm_retry');
    expect(retries).toHaveLength(2);
    expect(retries[0]).toMatchObject({ attempt: 1, step: 1 });
    expect(events.find((event) => event.kind === 'llm_response')).toMatchObject({ attempts: 3 });
  });

  it('fails clearly when the backend stays down after the bounded retries', async () => {
    const down: ScriptedTurn = { status: 502, body: 'Bad Gateway', contentType: 'text/plain' };
    const { exitCode, result } = await run([down, down, down]);
    // No server answers any more: exit 4 (no usable backend), as when none answered at the start.
    expect(exitCode).toBe(4);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('backend_unavailable');
    expect(result.error?.message).toMatch(/failed 3 times/);
    expect(server.chatRequests()).toHaveLength(3);
  });

  it('retries a stream that is cut short and uses the complete answer', async () => {
    const { result, events } = await run([
      {
        cutAfterChunks: 2,
        reply: { content: 'I will finish now, in a long sentence that streams in chunks.' },
      },
      FINISH,
    ]);
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'done', answer: '42' });
    expect(events.filter((event) => event.kind === 'llm_retry')).toHaveLength(1);
  });

  it('returns malformed tool-call JSON to the model as a tool error and goes on', async () => {
    const { result, events } = await run([
      { reply: { toolCalls: [{ name: 'convert_units', arguments: '{"value": 3, "from": "km"' }] } },
      FINISH,
    ]);
    expect(result.status).toBe('succeeded');
    expect(events.find((event) => event.kind === 'tool_error')).toMatchObject({
      reason: 'invalid_json',
      tool: 'convert_units',
    });
    const second = server.chatRequests()[1]!.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)).toMatchObject({ role: 'tool' });
    expect(second.messages.at(-1)?.content).toMatch(/not valid JSON/);
  });

  it('answers an unknown tool with the list of real tools', async () => {
    const { result, events } = await run([
      { reply: { toolCalls: [{ name: 'rm_rf', arguments: {} }] } },
      FINISH,
    ]);
    expect(result.status).toBe('succeeded');
    const error = events.find((event) => event.kind === 'tool_error');
    expect(error).toMatchObject({ reason: 'unknown_tool' });
    expect(error?.kind === 'tool_error' && error.error).toMatch(/convert_units, finish_task/);
  });

  it('returns arguments that fail the tool schema to the model', async () => {
    const { events } = await run([
      {
        reply: {
          toolCalls: [{ name: 'convert_units', arguments: { value: 'three', from: 'km', to: 'mi' } }],
        },
      },
      FINISH,
    ]);
    const error = events.find((event) => event.kind === 'tool_error');
    expect(error).toMatchObject({ reason: 'invalid_arguments' });
    expect(error?.kind === 'tool_error' && error.error).toMatch(/"value": expected number/);
  });

  it('recovers a Hermes-style tool call written as text, and logs it', async () => {
    const { result, events } = await run([
      {
        reply: {
          content:
            '<tool_call>{"name": "convert_units", "arguments": {"value": 2, "from": "m", "to": "cm"}}</tool_call>',
        },
      },
      FINISH,
    ]);
    expect(result.status).toBe('succeeded');
    expect(events.find((event) => event.kind === 'tool_call_recovered')).toMatchObject({ format: 'hermes' });
    expect(events.find((event) => event.kind === 'tool_result')).toMatchObject({ result: '2 m = 200 cm' });
  });

  it('takes a plain-text answer as the result and marks it in the runlog', async () => {
    const { result, events } = await run([{ reply: { content: 'It is 42 cm.' } }]);
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'It is 42 cm.' });
    expect(events.some((event) => event.kind === 'text_fallback')).toBe(true);
  });

  it('runs no call written as text to a tool that was not offered: logs it and tells the model', async () => {
    const { result, events } = await run([
      { reply: { content: '{"name": "shell", "arguments": {"command": "ls"}}' } },
      FINISH,
    ]);
    expect(events.find((event) => event.kind === 'tool_call_recovered')).toMatchObject({
      format: 'bare_json',
      tool_calls: [],
      refused: ['shell'],
    });
    expect(events.some((event) => event.kind === 'tool_call' && event.tool === 'shell')).toBe(false);
    expect(events.some((event) => event.kind === 'text_fallback')).toBe(false);
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'done', answer: '42' });
    const second = JSON.stringify(server.chatRequests()[1]?.body);
    expect(second).toContain('\\"shell\\", which is not a tool here');
  });

  it.each([
    [
      'qwen3_coder_xml',
      '<tool_call>\n<function=convert_units>\n<parameter=value>\n2\n</parameter>\n<parameter=from>\nm\n</parameter>\n<parameter=to>\ncm\n</parameter>\n</function>\n</tool_call>',
    ],
    ['mistral', '[TOOL_CALLS]convert_units[ARGS]{"value": 2, "from": "m", "to": "cm"}'],
    [
      'llama3_python_tag',
      '<|python_tag|>{"name": "convert_units", "parameters": {"value": 2, "from": "m", "to": "cm"}}<|eom_id|>',
    ],
    [
      'harmony',
      '<|channel|>commentary to=functions.convert_units <|constrain|>json<|message|>{"value":2,"from":"m","to":"cm"}<|call|>',
    ],
    ['lfm', '<|tool_call_start|>[convert_units(value=2, from="m", to="cm")]<|tool_call_end|>'],
    ['bare_json', '{"name": "convert_units", "args": {"value": 2, "from": "m", "to": "cm"}}'],
    ['gemma4', '<|tool_call>call:convert_units{from:<|"|>m<|"|>,to:<|"|>cm<|"|>,value:2}<tool_call|>'],
  ])('runs a %s call written as text, and names the dialect in the runlog', async (dialect, content) => {
    const { result, events } = await run([{ reply: { content } }, FINISH]);
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: 'done', answer: '42' });
    expect(events.find((event) => event.kind === 'tool_call_recovered')).toMatchObject({ format: dialect });
    expect(events.find((event) => event.kind === 'tool_result')).toMatchObject({ result: '2 m = 200 cm' });
    // The markup is not sent back as the assistant's text: the call lives in tool_calls.
    const sent = (
      server.chatRequests()[1]!.body as {
        messages: { role: string; content: unknown; tool_calls?: unknown[] }[];
      }
    ).messages.filter((message) => message.role === 'assistant');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.content ?? '').toBe('');
    expect(sent[0]?.tool_calls).toHaveLength(1);
  });

  it('keeps the tool list on the final turn and runs nothing but finish_task there', async () => {
    const convert: ScriptedTurn = {
      reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } }] },
    };
    const { exitCode, result, events } = await run([convert, convert], { args: ['--max-steps', '1'] });
    expect(exitCode).toBe(3);
    expect(result.status).toBe('max_steps');
    const refused = events.filter((event) => event.kind === 'tool_error');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ step: 2, tool: 'convert_units', reason: 'refused' });
    expect(refused[0]?.kind === 'tool_error' && refused[0].error).toMatch(/only finish_task is accepted now/);
    expect(events.filter((event) => event.kind === 'tool_result')).toHaveLength(1);
    const offered = server
      .chatRequests()
      .map((request) => JSON.stringify((request.body as { tools: unknown }).tools));
    expect(offered[1]).toBe(offered[0]);
  });

  it("diagnoses LM Studio's streamed overflow (200, event: error) as context_overflow, at once, not as a dead server", async () => {
    const message =
      'Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.';
    // lmstudio-bug-tracker #2322 (0.4.21): the error arrives inside a 200 event stream.
    const { exitCode, result } = await run([{ sseError: { error: { message }, message } }, FINISH]);
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('context_overflow');
    expect(result.error?.message).toMatch(
      /no longer fits in the context window of "qwen\/qwen3-coder-30b".*Input does not fit/,
    );
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('fails at once, with one request, when the named model does not support tools', async () => {
    // Named with --model: left to choose, the catalog would know from /api/show and never pick it.
    const { exitCode, result } = await run([], {
      flavor: 'ollama',
      toolUse: false,
      args: ['--model', MODEL],
    });
    // docs/errors.md: model_lacks_tools exits 4 (no usable model), even when the loop reports it.
    expect(exitCode).toBe(4);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('model_lacks_tools');
    expect(result.error?.message).toMatch(/qwen\/qwen3-coder-30b.*does not support tools/);
    expect(server.chatRequests()).toHaveLength(1);
  });
});

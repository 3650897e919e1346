import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { Sandbox } from '../../support/fabric-cli.ts';
import { createHash } from 'node:crypto';
import {
  BUILD_INFO,
  CHAT_FORMAT,
  CHAT_TEMPLATE,
  VLLM_VERSION,
  llamaParseFailure,
  ollamaParserError,
  startFakeVllm,
} from '../../support/fake-llm-compat.ts';
import { startFakeLlmServer } from '../../support/fake-llm-server.ts';
import type { FakeLlmServer, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { unitsOnFakes } from '../../support/units-on-fakes.ts';
import { ROOT, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';

/**
 * Issue 36: local models as they are, round two (research/local-model-quirks-2.md). Each case
 * drives `fabric run` through a fake llama-server or vLLM that answers with the wire shape the
 * note records and refuses what the real server's template refuses in a history (a system
 * message after index 0, replayed arguments that are not an object, a Mistral id of another form).
 */
const QWEN = { id: 'Qwen3-Coder-30B-A3B-Instruct', contextLength: 32768 };
const MISTRAL = { id: 'mistralai/Mistral-Small-3.2-24B-Instruct-2506', contextLength: 32768 };

const ARGS = { value: 3, from: 'km', to: 'mi' };
const FINISH: ScriptedTurn = {
  reply: {
    toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '1.864114 mi' } }],
  },
};

type Quirk = Extract<RunEvent, { kind: 'model_quirk' }>;
const quirks = (events: RunEvent[]) => events.filter((e): e is Quirk => e.kind === 'model_quirk');
const results = (events: RunEvent[]) =>
  events.filter((e) => e.kind === 'tool_result' || e.kind === 'tool_error');

/** The tool calls of the assistant messages a chat request carried back. */
function replayedCalls(server: FakeLlmServer, request: number) {
  const body = server.chatRequests()[request]?.body as {
    messages: { role: string; tool_calls?: { id: string; function: { arguments: string } }[] }[];
  };
  return body.messages.flatMap((m) => m.tool_calls ?? []);
}

describe('local models as they are (issue 36)', () => {
  const fakes = unitsOnFakes();

  it('Q1, Q6: a JSON string inside the JSON string is decoded once, run, and sent back as the object', async () => {
    const { result, events, server } = await fakes.vllm({
      models: [QWEN],
      script: [
        // Granite 4 through vLLM's hermes parser (vllm PR #54964): the arguments slot holds a string.
        {
          reply: { toolCalls: [{ name: 'convert_units', arguments: JSON.stringify(JSON.stringify(ARGS)) }] },
        },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(quirks(events)).toMatchObject([
      { quirk: 'arguments_repaired', note: 'Q1', tool: 'convert_units' },
    ]);
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe(JSON.stringify(ARGS));
  });

  it('Q3: a number written as text is read as the number the schema asks for', async () => {
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { ...ARGS, value: '3' } }] } },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(quirks(events)).toMatchObject([
      { quirk: 'arguments_repaired', note: 'Q3', detail: '"value" was the text "3": read as 3' },
    ]);
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe(JSON.stringify(ARGS));
  });

  it('Q7: arguments that are not JSON are stored as {}, the raw text kept, and the history stays valid', async () => {
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: '{"value": 3, "from": "km", "to' }] } },
        { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(quirks(events)).toMatchObject([
      { quirk: 'arguments_unreadable', note: 'Q7', raw: '{"value": 3, "from": "km", "to' },
    ]);
    expect(results(events)[0]).toMatchObject({ kind: 'tool_error', reason: 'invalid_json' });
    // llama-server answers 500 to a replayed call whose arguments do not parse (llama.cpp #25510).
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe('{}');
    expect(server.chatRequests()).toHaveLength(3);
  });

  it('Q10: ids the fabric makes for recovered calls fit a Mistral template', async () => {
    const { result, server } = await fakes.vllm({
      models: [MISTRAL],
      mistralIds: true,
      script: [
        {
          reply: { content: `[TOOL_CALLS][{"name": "convert_units", "arguments": ${JSON.stringify(ARGS)}}]` },
        },
        { reply: { toolCalls: [{ id: 'a1B2c3D4e', name: 'finish_task', arguments: FINISH_ARGS }] } },
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(replayedCalls(server, 1)[0]?.id).toMatch(/^[A-Za-z0-9]{9}$/);
  });

  /** vLLM's own ids (`call_` and 24 alphanumerics) for a Mistral model whose template checks them. */
  const MISTRAL_SCRIPT: ScriptedTurn[] = [
    { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
    { reply: { toolCalls: [{ name: 'finish_task', arguments: FINISH_ARGS }] } },
  ];

  it("Q10: a Mistral model's profile rewrites every id the server gave to nine alphanumerics, so its template accepts the history", async () => {
    const { result, events, server } = await fakes.vllm({
      models: [MISTRAL],
      mistralIds: true,
      script: [...MISTRAL_SCRIPT],
    });
    expect(result.status).toBe('succeeded');
    const given = events.find((e) => e.kind === 'llm_response');
    expect(given?.kind === 'llm_response' ? given.tool_calls[0]?.id : '').toMatch(/^call_/);
    const sent = server.chatRequests()[1]?.body as {
      messages: { role: string; tool_calls?: { id: string }[]; tool_call_id?: string }[];
    };
    const id = sent.messages.find((m) => m.role === 'assistant')?.tool_calls?.[0]?.id;
    expect(id).toMatch(/^[A-Za-z0-9]{9}$/);
    expect(sent.messages.find((m) => m.role === 'tool')?.tool_call_id).toBe(id);
    expect(events.find((e) => e.kind === 'run_start')).toMatchObject({
      profile: { matched: ['*mistral*'], settings: { tool_call_ids: 'nine_alnum' } },
    });
  });

  it('Q10: with the profile set to keep the server ids, the same template refuses the next request', async () => {
    const { result } = await fakes.vllm(
      { models: [MISTRAL], mistralIds: true, script: [...MISTRAL_SCRIPT] },
      (backend) =>
        makeSandbox({
          llm: { probe_timeout_ms: 1000, backends: [backend] },
          profiles: { '*mistral*': { tool_call_ids: 'server' } },
        }),
    );
    expect(result.status).toBe('failed');
    expect(result.error?.message).toContain('must be a-z, A-Z, 0-9, with a length of 9');
  });

  it('Q13: vLLM labelling a prose turn tool_calls with no call makes it an answer, not a tool turn', async () => {
    const { result, events, server } = await fakes.vllm({
      models: [QWEN],
      // vllm #53255: `{"content":"I'm doing well…","tool_calls":[]},"finish_reason":"tool_calls"`.
      script: [{ reply: { content: '2 m is 200 cm.', toolCalls: [], finishReason: 'tool_calls' } }],
    });
    expect(result.status).toBe('succeeded');
    expect(result.payload).toEqual({ summary: '2 m is 200 cm.' });
    expect(events.find((e) => e.kind === 'llm_response')).toMatchObject({ finish_reason: 'tool_calls' });
    expect(results(events)).toEqual([]);
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('Q14: calls that vLLM ends with "stop" (a named tool_choice) are run all the same', async () => {
    const { result, events, server } = await fakes.vllm({
      models: [QWEN],
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }], finishReason: 'stop' } },
        { reply: { ...FINISH.reply, finishReason: 'stop' } },
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(result.payload).toMatchObject({ answer: '1.864114 mi' });
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe(JSON.stringify(ARGS));
  });

  it('Q5: empty or null arguments to a tool with required parameters are a tool error, stored as {}', async () => {
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      script: [
        // brave-browser #56601: `"function":{"name":"get_time","arguments":""}`.
        { reply: { toolCalls: [{ name: 'convert_units', arguments: '' }] } },
        { reply: { toolCalls: [{ name: 'convert_units', arguments: 'null' }] } },
        { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    const [empty, nothing, ran] = results(events);
    expect(empty).toMatchObject({ kind: 'tool_error', reason: 'invalid_arguments' });
    expect(nothing).toMatchObject({ kind: 'tool_error', reason: 'invalid_arguments' });
    expect(ran).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    // Both went back as `{}`: llama-server refuses a replayed call whose arguments do not parse.
    expect(replayedCalls(server, 2).map((call) => call.function.arguments)).toEqual(['{}', '{}']);
  });
});

/** A sandbox on one backend whose profile caps a reply at `maxTokens` (sent as `max_tokens`). */
function cappedSandbox(backend: { kind: string; url: string }, maxTokens: number) {
  return makeSandbox({
    llm: {
      retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
      probe_timeout_ms: 1000,
      backends: [backend],
    },
    profiles: { 'Qwen3-Coder*': { max_output_tokens: maxTokens } },
  });
}

const LONG = 'x'.repeat(400);

describe('a turn cut by the output limit (issue 36, Q12–Q16)', () => {
  const fakes = unitsOnFakes();

  it('Q12: a call cut mid-arguments that vLLM labels tool_calls is not run, and the model is told it was cut', async () => {
    const { result, events, server } = await fakes.vllm(
      {
        models: [QWEN],
        script: [
          { reply: { toolCalls: [{ name: 'convert_units', arguments: { ...ARGS, to: `mi ${LONG}` } }] } },
          { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
          FINISH,
        ],
      },
      (backend) => cappedSandbox(backend, 30),
    );
    expect(result.status).toBe('succeeded');
    const first = events.find((e) => e.kind === 'llm_response');
    // The wire as vLLM sends it: tool_calls, 30 of 30 tokens, the arguments unterminated.
    expect(first).toMatchObject({ finish_reason: 'tool_calls', usage: { completion_tokens: 30 } });
    expect(quirks(events).map((q) => [q.quirk, q.note])).toEqual([
      ['turn_cut', 'Q12'],
      ['arguments_unreadable', 'Q7'],
    ]);
    const error = results(events)[0];
    expect(error).toMatchObject({ kind: 'tool_error', reason: 'refused' });
    expect(error).toMatchObject({
      error: expect.stringContaining(
        'Your reply was cut off at 30 tokens, the most one reply may have, so its tool call was not run.',
      ),
    });
    expect(results(events)[1]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe('{}');
  });

  it('Q12: the turn after a cut one asks for twice the output limit, recorded, and the longer call fits', async () => {
    // ~45 tokens of arguments: more than the profile's 30, less than 60.
    const summary = `Converted 3 km to miles: ${'about 1.864114 mi, '.repeat(8)}`;
    const { result, events, server } = await fakes.llama(
      {
        model: QWEN,
        script: [
          { reply: { toolCalls: [{ name: 'convert_units', arguments: { ...ARGS, to: `mi ${LONG}` } }] } },
          { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary, answer: '1.864114 mi' } }] } },
        ],
      },
      (backend) => cappedSandbox(backend, 30),
    );
    expect(result.status).toBe('succeeded');
    expect(result.payload).toMatchObject({ summary });
    const limits = server.chatRequests().map((r) => (r.body as { max_tokens?: number }).max_tokens);
    expect(limits).toEqual([30, 60]);
    const requests = events.filter((e) => e.kind === 'llm_request');
    expect(requests.map((e) => (e.kind === 'llm_request' ? e.max_tokens : 'x'))).toEqual([undefined, 60]);
    expect(quirks(events)[0]).toMatchObject({
      quirk: 'turn_cut',
      detail: expect.stringContaining('the next request asks for up to 60 tokens'),
    });
  });

  it('Q16: text cut inside a <tool_call> block is neither an answer nor a call', async () => {
    const { result, events, server } = await fakes.llama(
      {
        model: QWEN,
        script: [
          {
            reply: {
              content: `<tool_call>\n{"name": "convert_units", "arguments": {"value": 3, "note": "${LONG}"}}\n</tool_call>`,
            },
          },
          { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
          FINISH,
        ],
      },
      (backend) => cappedSandbox(backend, 30),
    );
    expect(result.status).toBe('succeeded');
    expect(result.payload).toMatchObject({ answer: '1.864114 mi' });
    expect(events.find((e) => e.kind === 'llm_response')).toMatchObject({ finish_reason: 'length' });
    expect(quirks(events)).toMatchObject([{ quirk: 'turn_cut' }]);
    expect(events.some((e) => e.kind === 'tool_call_recovered' || e.kind === 'text_fallback')).toBe(false);
    const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('so it is not taken as your answer'),
    });
  });
});

const XML_CALL =
  '<tool_call>\n<function=convert_units>\n<parameter=value>\n3\n</parameter>\n<parameter=from>\nkm\n</parameter>\n<parameter=to>\nmi\n</parameter>\n</function>\n</tool_call>';

describe('a server whose parser fails on the model output (issue 36, Q17, Q18)', () => {
  const fakes = unitsOnFakes();

  it('Q17: the call in llama-server\'s "Failed to parse input" 500 is read and run, with no retry', async () => {
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      script: [llamaParseFailure(204, XML_CALL), FINISH],
    });
    expect(result.status).toBe('succeeded');
    expect(server.chatRequests()).toHaveLength(2);
    expect(events.some((e) => e.kind === 'llm_retry')).toBe(false);
    expect(quirks(events)).toMatchObject([{ quirk: 'parse_failed', note: 'Q17', raw: XML_CALL }]);
    expect(events.find((e) => e.kind === 'tool_call_recovered')).toMatchObject({ format: 'qwen3_coder_xml' });
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
  });

  it('Q17: an unreadable rest is asked again with a correction, and a second failure ends the run with the diagnosis', async () => {
    const { result, events, exitCode, server } = await fakes.llama({
      model: QWEN,
      script: [llamaParseFailure(12, '</tool_call>'), llamaParseFailure(12, '</tool_call>')],
    });
    expect(exitCode).toBe(1);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('model_output_unparseable');
    expect(result.error?.message).toContain('Failed to parse input at pos 12: </tool_call>');
    expect(result.error?.message).toContain(
      'It failed again after the model was asked to write the call again',
    );
    // Never retried identically, never a dead server.
    expect(server.chatRequests()).toHaveLength(2);
    expect(events.some((e) => e.kind === 'llm_retry')).toBe(false);
    const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)?.content).toContain(
      'Your last reply could not be read by the server as a tool call',
    );
  });

  it("Q18: Ollama's built-in parser error line is the model's output: asked again changed, then the run succeeds", async () => {
    const { result, events, server } = await fakes.ollama(
      {
        models: [{ id: 'qwen3-coder:30b', toolUse: true }],
        script: [
          ollamaParserError('XML syntax error on line 7: expected element name after <'),
          { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
          FINISH,
        ],
      },
      'qwen3-coder:30b',
    );
    expect(result.status).toBe('succeeded');
    expect(server.chatRequests()).toHaveLength(3);
    expect(events.some((e) => e.kind === 'llm_retry')).toBe(false);
    expect(quirks(events)).toMatchObject([{ quirk: 'parse_failed' }]);
  });
});

describe('an empty message with tokens counted (issue 36, Q19)', () => {
  const fakes = unitsOnFakes();

  /** Ollama parsing calls through the template: a call named by the tool's description is dropped. */
  const DESCRIBED: ScriptedTurn = {
    reply: { toolCalls: [{ name: 'Converts a length between units', arguments: ARGS }] },
  };

  it('is a parse failure, not an answer: asked again with the exact tool names, and the run succeeds', async () => {
    const { result, events, server } = await fakes.ollama(
      {
        templateToolParser: true,
        models: [{ id: 'qwen2.5:7b', toolUse: true }],
        script: [DESCRIBED, { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } }, FINISH],
      },
      'qwen2.5:7b',
    );
    expect(result.status).toBe('succeeded');
    expect(result.payload).toMatchObject({ answer: '1.864114 mi' });
    const first = events.find((e) => e.kind === 'llm_response');
    expect(first).toMatchObject({ content: '', tool_calls: [] });
    expect(quirks(events)).toMatchObject([{ quirk: 'empty_turn', note: 'Q19' }]);
    const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)?.content).toContain(
      'Call exactly one of these tools by its exact name, with JSON arguments: convert_units, finish_task.',
    );
  });

  it('twice in a row ends the run with the diagnosis, not a text answer', async () => {
    const { result, exitCode, server } = await fakes.ollama(
      {
        templateToolParser: true,
        models: [{ id: 'qwen2.5:7b', toolUse: true }],
        script: [DESCRIBED, DESCRIBED],
      },
      'qwen2.5:7b',
    );
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('model_output_unparseable');
    expect(result.error?.message).toContain('twice in a row and the server returned an empty message');
    expect(server.chatRequests()).toHaveLength(2);
  });
});

/** A qwen3_coder call block, as vLLM's reasoning parser leaves it in `reasoning` (vllm #39056). */
const XML_BLOCK =
  '<tool_call>\n<function=convert_units>\n<parameter=value>\n3\n</parameter>\n' +
  '<parameter=from>\nkm\n</parameter>\n<parameter=to>\nmi\n</parameter>\n</function>\n</tool_call>';

/** A vLLM turn with everything in `reasoning`: content empty, no tool_calls, finish_reason stop. */
const inReasoning = (reasoning: string): ScriptedTurn => ({
  reply: { content: '', toolCalls: [], reasoning, reasoningField: 'reasoning', finishReason: 'stop' },
});

describe('a call written inside <think> (issue 36, Q24)', () => {
  const fakes = unitsOnFakes();

  it('a whole block naming an offered tool at the end of the reasoning is run, recorded as from the reasoning', async () => {
    const { result, events, server } = await fakes.vllm({
      models: [QWEN],
      script: [inReasoning(`I should convert 3 km to miles.\n${XML_BLOCK}`), FINISH],
    });
    expect(result.status).toBe('succeeded');
    expect(events.find((e) => e.kind === 'tool_call_recovered')).toMatchObject({
      format: 'qwen3_coder_xml',
      from: 'reasoning',
      tool_calls: [{ name: 'convert_units', arguments: JSON.stringify(ARGS) }],
    });
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    expect(replayedCalls(server, 1)[0]?.function.arguments).toBe(JSON.stringify(ARGS));
  });

  it('a block followed by more thought, or cut short, is not run: the model is told to act', async () => {
    const { result, events, server } = await fakes.vllm({
      models: [QWEN],
      script: [
        inReasoning(`Maybe:\n${XML_BLOCK}\nBut first I should check which units it accepts.`),
        inReasoning(`I should convert.\n${XML_BLOCK.slice(0, XML_BLOCK.indexOf('<parameter=to>'))}`),
        { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(events.some((e) => e.kind === 'tool_call_recovered')).toBe(false);
    expect(results(events)).toMatchObject([{ kind: 'tool_result', result: '3 km = 1.864114 mi' }]);
    for (const request of [1, 2]) {
      const body = server.chatRequests()[request]?.body as { messages: { content: string }[] };
      expect(body.messages.at(-1)?.content).toContain('You reasoned but did not act');
    }
  });
});

describe('stream assembly (issue 36, Q29)', () => {
  const fakes = unitsOnFakes();

  it.each([
    [
      'a call whose head and first fragment share one chunk (vLLM speculative decoding)',
      { indexTwiceInChunk: true },
    ],
    [
      'two calls on one index, each with its own id (a gateway flattening parallel calls)',
      { sharedIndex: true },
    ],
  ])('%s: each call whole, each run', async (_name, quirk) => {
    const { result, events } = await fakes.vllm({
      models: [QWEN],
      script: [
        {
          reply: {
            ...quirk,
            toolCalls: [
              { name: 'convert_units', arguments: ARGS },
              { name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } },
            ],
          },
        },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(results(events).map((e) => (e.kind === 'tool_result' ? e.result : e.kind))).toEqual([
      '3 km = 1.864114 mi',
      '2 m = 200 cm',
    ]);
    expect(quirks(events)).toEqual([]);
  });

  it('parallel calls streamed without an index are two calls, each with its own arguments', async () => {
    const { result, events } = await fakes.vllm({
      models: [QWEN],
      script: [
        {
          reply: {
            noIndex: true,
            toolCalls: [
              { name: 'convert_units', arguments: ARGS },
              { name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } },
            ],
          },
        },
        FINISH,
      ],
    });
    expect(result.status).toBe('succeeded');
    expect(results(events).map((e) => (e.kind === 'tool_result' ? e.result : e.kind))).toEqual([
      '3 km = 1.864114 mi',
      '2 m = 200 cm',
    ]);
  });
});

describe('several calls in one turn (issue 36, Q27, Q28)', () => {
  const fakes = unitsOnFakes();

  const TWO: ScriptedTurn = {
    reply: {
      toolCalls: [
        { name: 'convert_units', arguments: ARGS },
        { name: 'convert_units', arguments: { value: 2, from: 'm', to: 'cm' } },
      ],
    },
  };
  const answers = (events: RunEvent[]) =>
    results(events).map((e) => (e.kind === 'tool_result' ? e.result : e.kind));
  const asked = (server: FakeLlmServer) =>
    server.chatRequests().map((r) => (r.body as { parallel_tool_calls?: unknown }).parallel_tool_calls);

  it('Q27: llama-server is asked for parallel calls, so both calls of a turn come as calls and run', async () => {
    const { result, events, server } = await fakes.llama({ model: QWEN, script: [TWO, FINISH] });
    expect(result.status).toBe('succeeded');
    expect(asked(server)).toEqual([true, true]);
    expect(answers(events)).toEqual(['3 km = 1.864114 mi', '2 m = 200 cm']);
    expect(events.some((e) => e.kind === 'tool_call_recovered')).toBe(false);
  });

  it('Q27: a template that cannot do parallel calls leaves the second in the content, where it is read and run', async () => {
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      parallelTemplate: false,
      script: [TWO, FINISH],
    });
    expect(result.status).toBe('succeeded');
    const first = events.find((e) => e.kind === 'llm_response');
    expect(first).toMatchObject({ tool_calls: [{ name: 'convert_units' }] });
    expect(first?.kind === 'llm_response' ? first.content : '').toContain('<tool_call>');
    expect(events.find((e) => e.kind === 'tool_call_recovered')).toMatchObject({
      from: 'content_beside_calls',
      format: 'hermes',
      tool_calls: [{ name: 'convert_units', arguments: JSON.stringify({ value: 2, from: 'm', to: 'cm' }) }],
    });
    expect(answers(events)).toEqual(['3 km = 1.864114 mi', '2 m = 200 cm']);
    // Both calls go back as calls, each answered, and the text is not sent back beside them.
    const second = server.chatRequests()[1]?.body as {
      messages: {
        role: string;
        content: string | null;
        tool_calls?: { id: string }[];
        tool_call_id?: string;
      }[];
    };
    const assistant = second.messages.find((m) => m.role === 'assistant');
    expect(assistant?.tool_calls).toHaveLength(2);
    expect(assistant?.content ?? '').not.toContain('<tool_call>');
    expect(second.messages.filter((m) => m.role === 'tool').map((m) => m.tool_call_id)).toEqual(
      assistant?.tool_calls?.map((call) => call.id),
    );
  });

  it('Q28: vLLM, which drops every call after the first when told false, is asked true and runs both', async () => {
    const { result, events, server } = await fakes.vllm({ models: [QWEN], script: [TWO, FINISH] });
    expect(result.status).toBe('succeeded');
    expect(asked(server)).toEqual([true, true]);
    expect(answers(events)).toEqual(['3 km = 1.864114 mi', '2 m = 200 cm']);
  });
});

describe("the server's build and its tool-call parser in run_start (issue 36, Q33, Q34)", () => {
  const fakes = unitsOnFakes();

  const starts = (events: RunEvent[]) => events.find((e) => e.kind === 'run_start');
  const SIMPLE: ScriptedTurn[] = [
    { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } },
    FINISH,
  ];

  it("llama-server: /props build_info, /slots chat format and the template's digest, shown by fabric runs show", async () => {
    const { result, events, sandbox } = await fakes.llama({ model: QWEN, script: [...SIMPLE] });
    expect(result.status).toBe('succeeded');
    const digest = createHash('sha256').update(CHAT_TEMPLATE).digest('hex').slice(0, 12);
    expect(starts(events)).toMatchObject({
      server_build: `llama-server ${BUILD_INFO}`,
      tool_parser: `chat format ${CHAT_FORMAT}, chat template sha256:${digest}`,
    });
    const shown = await runFabricInProcess(['runs', 'show', result.run_id, '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(shown.stdout).toMatch(new RegExp(`server: +llama-server ${BUILD_INFO}\n`));
    expect(shown.stdout).toMatch(
      new RegExp(`tool parser: +chat format ${CHAT_FORMAT}, chat template sha256:${digest}\n`),
    );
  });

  it('vLLM: /version; no endpoint says its --tool-call-parser, so none is claimed', async () => {
    const { result, events } = await fakes.vllm({ models: [QWEN], script: [...SIMPLE] });
    expect(result.status).toBe('succeeded');
    expect(starts(events)).toMatchObject({ server_build: `vLLM ${VLLM_VERSION}` });
    expect(starts(events)).not.toHaveProperty('tool_parser');
  });

  it("Ollama: /api/version, and /api/show's parser and renderer (or the template, when the parser is empty)", async () => {
    const models = [
      { id: 'qwen3-coder:30b', toolUse: true, parser: 'qwen3-coder', renderer: 'qwen3-coder' },
      { id: 'qwen2.5:7b', toolUse: true, parser: '' },
    ];
    const builtIn = await fakes.ollama({ models, script: [...SIMPLE] }, 'qwen3-coder:30b');
    expect(starts(builtIn.events)).toMatchObject({
      server_build: 'Ollama 0.12.6',
      tool_parser: 'built-in parser qwen3-coder, renderer qwen3-coder',
    });
  });

  it("Ollama: the model template, when /api/show's parser is empty", async () => {
    const models = [{ id: 'qwen2.5:7b', toolUse: true, parser: '' }];
    const template = await fakes.ollama({ models, script: [...SIMPLE] }, 'qwen2.5:7b');
    expect(starts(template.events)).toMatchObject({ tool_parser: 'the model template (no built-in parser)' });
  });
});

describe('Ollama /v1 streams that end with no finish chunk (issue 36, Q15, Q18)', () => {
  const fakes = unitsOnFakes();

  /** Ollama reached through its OpenAI-compatible /v1 (an `openai` backend with no key). */
  async function viaV1(script: ScriptedTurn[]) {
    const started = startFakeLlmServer({
      flavor: 'ollama',
      models: [{ id: 'qwen3-coder:30b', toolUse: true }],
      script,
    });
    return fakes.on('openai', started, undefined, ['--model', 'qwen3-coder:30b']);
  }
  const CALL = { toolCalls: [{ name: 'convert_units', arguments: ARGS }] };

  it.each(['after_done', 'closed'] as const)(
    'a whole call in a stream that ends %s with no finish chunk is the turn: run once, no retry',
    async (unfinished) => {
      const { result, events, server } = await viaV1([{ reply: CALL, unfinished }, FINISH]);
      expect(result.status).toBe('succeeded');
      expect(server.chatRequests()).toHaveLength(2);
      expect(events.some((e) => e.kind === 'llm_retry')).toBe(false);
      expect(events.find((e) => e.kind === 'llm_response')).toMatchObject({ finish_reason: null });
      expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: '3 km = 1.864114 mi' });
    },
  );

  it("an empty stream that just closes is Ollama's swallowed parser error: asked again changed, never a dead server", async () => {
    const { result, events, server } = await viaV1([
      { reply: { content: '' }, unfinished: 'closed' },
      { reply: CALL },
      FINISH,
    ]);
    expect(result.status).toBe('succeeded');
    expect(server.chatRequests()).toHaveLength(3);
    expect(events.some((e) => e.kind === 'llm_retry')).toBe(false);
    expect(quirks(events)).toMatchObject([{ quirk: 'empty_turn', note: 'Q18' }]);
    const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
    expect(second.messages.at(-1)?.content).toContain('the server ended its stream unfinished');
  });

  it('twice in a row ends the run as model_output_unparseable, not backend_unavailable', async () => {
    const empty: ScriptedTurn = { reply: { content: '' }, unfinished: 'closed' };
    const { result, exitCode, server } = await viaV1([empty, empty]);
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('model_output_unparseable');
    expect(server.chatRequests()).toHaveLength(2);
  });

  /** Text cut off where the generation failed: vLLM #37937 breaks off with no `length` chunk (Q15). */
  const PART: ScriptedTurn = { reply: { content: '3 km is about 1.8' }, unfinished: 'closed' };

  it.each(['vllm', 'ollama /v1'] as const)(
    'Q15: text in a stream that closes with no finish chunk (%s) is cut, not the answer: asked again, and the run succeeds',
    async (kind) => {
      const script = [PART, FINISH];
      const { result, events, server } =
        kind === 'vllm' ? await fakes.vllm({ models: [QWEN], script }) : await viaV1(script);
      expect(result.status).toBe('succeeded');
      expect(result.payload).toMatchObject({ answer: '1.864114 mi' });
      expect(events.some((e) => e.kind === 'text_fallback' || e.kind === 'llm_retry')).toBe(false);
      expect(quirks(events)).toMatchObject([{ quirk: 'turn_cut', note: 'Q15', raw: '3 km is about 1.8' }]);
      const second = server.chatRequests()[1]?.body as { messages: { role: string; content: string }[] };
      expect(second.messages.at(-1)).toMatchObject({
        role: 'user',
        content: expect.stringContaining('Your reply ended before the server finished it'),
      });
    },
  );

  it('Q15: twice in a row ends the run with the diagnosis, never the cut text as its answer', async () => {
    const { result, exitCode, server } = await fakes.vllm({ models: [QWEN], script: [PART, PART] });
    expect(exitCode).toBe(1);
    expect(result.error?.code).toBe('model_output_unparseable');
    expect(result.error?.message).toContain('with no finish_reason twice in a row');
    expect(server.chatRequests()).toHaveLength(2);
  });
});

describe('tool schemas sent dereferenced and simple (issue 36, Q2, Q22)', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('a $ref parameter reaches vLLM inlined, so its XML parser types it and the call runs', async () => {
    server = await startFakeVllm({
      models: [QWEN],
      xmlToolParser: true,
      script: [
        { reply: { toolCalls: [{ name: 'book_period', arguments: { period: { kind: 'week' } } }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Booked a week.' } }] } },
      ],
    });
    sandbox = await makeSandbox({
      llm: {
        retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
        probe_timeout_ms: 1000,
        backends: [{ kind: 'vllm', url: server.url }],
      },
      specialists: {
        periods: {
          builder: `${join(ROOT, 'test/support/ref-schema-pack.ts')}#buildPack`,
          description: 'periods',
        },
      },
    });
    const out = await runFabricInProcess(
      ['run', '-s', 'periods', '--json', '--config', sandbox.configPath, 'book a week'],
      { env: testEnv(sandbox, 'http://127.0.0.1:9'), cwd: sandbox.dir },
    );
    const result = JSON.parse(out.stdout) as RunResult;
    expect(result.status).toBe('succeeded');
    const events = parseRunlog(await readFile(result.runlog ?? '', 'utf8'), result.runlog ?? '').events;
    expect(results(events)[0]).toMatchObject({ kind: 'tool_result', result: 'booked a week' });
    const sent = (server.chatRequests()[0]!.body as { tools: { function: { parameters: unknown } }[] })
      .tools[0];
    expect(sent?.function.parameters).toEqual({
      type: 'object',
      properties: {
        period: {
          type: 'object',
          properties: { kind: { type: 'string' } },
          required: ['kind'],
          description: 'the period to book',
        },
        email: { type: 'string' },
      },
      required: ['period'],
    });
  });
});

describe('one system message, at index 0 (issue 36, Q8)', () => {
  const fakes = unitsOnFakes();

  it("a stuck warning goes as a user message, which llama-server's template accepts", async () => {
    const same: ScriptedTurn = { reply: { toolCalls: [{ name: 'convert_units', arguments: ARGS }] } };
    const { result, events, server } = await fakes.llama({
      model: QWEN,
      script: [same, same, same, same, FINISH],
    });
    expect(result.status).toBe('succeeded');
    expect(events.find((e) => e.kind === 'run_stuck')).toMatchObject({ action: 'warned' });
    const last = server.chatRequests().at(-1)?.body as { messages: { role: string }[] };
    expect(last.messages.filter((m) => m.role === 'system')).toHaveLength(1);
    expect(last.messages[0]?.role).toBe('system');
    expect(last.messages.at(-1)?.role).toBe('user');
  });
});

const FINISH_ARGS = { summary: 'Converted.', answer: '1.864114 mi' };

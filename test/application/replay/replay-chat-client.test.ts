import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { executeTask } from '../../../src/application/run/execute-task.ts';
import type { ChatRequest, ChatStreamEvent } from '../../../src/application/ports.ts';
import { ReplayChatClient } from '../../../src/application/replay/replay-chat-client.ts';
import { SpecialistSchema } from '../../../src/config/schema.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';
import { MemoryRunLogStore } from '../../../src/infrastructure/runlog/memory-run-log-store.ts';
import { systemClock } from '../../../src/infrastructure/clock.ts';
import { buildPack } from '../../../packs/example/pack.ts';

function stamp(inputs: readonly RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({ v: 1, ts: new Date(0).toISOString(), run_id: 'run-1', seq: index + 1, ...input }) as RunEvent,
  );
}

function response(step: number, content: string, calls: [string, string, unknown][]): RunEventInput {
  return {
    kind: 'llm_response',
    step,
    content,
    tool_calls: calls.map(([id, name, args]) => ({ id, name, arguments: JSON.stringify(args) })),
    finish_reason: calls.length > 0 ? 'tool_calls' : 'stop',
    usage: { prompt_tokens: 10 * step, completion_tokens: step, total_tokens: 11 * step },
    latency_ms: 123,
    attempts: 1,
    backend: 'ollama http://127.0.0.1:11434',
  };
}

const START: RunEventInput = {
  kind: 'run_start',
  specialist: 'units',
  task: 'Convert 3 km to miles',
  model: 'qwen3:8b',
  backend: 'ollama http://127.0.0.1:11434',
  workspace: null,
  config_digest: 'abc',
  fabric_version: '0.1.0',
  max_steps: 30,
  budget_s: 600,
};

const RECORDED = stamp([
  START,
  { kind: 'llm_retry', step: 1, attempt: 1, delay_ms: 5, reason: 'HTTP 503' },
  response(1, 'Converting first.', [['c1', 'convert_units', { value: 3, from: 'km', to: 'mi' }]]),
  response(2, '', [['c2', 'finish_task', { summary: 'Converted.', answer: '1.864114 mi' }]]),
]);

function request(): ChatRequest {
  return { model: 'qwen3:8b', messages: [], tools: [], signal: new AbortController().signal };
}

describe('ReplayChatClient', () => {
  it('answers each request with the next recorded llm_response, and takes no llm_retry for a turn', async () => {
    const chat = new ReplayChatClient(RECORDED);
    expect(chat.backend).toBe('ollama');
    expect(chat.recorded).toBe(2);
    const seen: ChatStreamEvent[] = [];
    const first = await chat.complete(request(), (event) => seen.push(event));
    expect(first).toMatchObject({
      content: 'Converting first.',
      toolCalls: [{ id: 'c1', name: 'convert_units', arguments: '{"value":3,"from":"km","to":"mi"}' }],
      finishReason: 'tool_calls',
      usage: { promptTokens: 10, completionTokens: 1, totalTokens: 11 },
      attempts: 1,
    });
    expect(seen).toEqual([
      { type: 'text', text: 'Converting first.' },
      { type: 'tool_call_started', name: 'convert_units' },
    ]);
    const second = await chat.complete(request());
    expect(second.toolCalls[0]?.name).toBe('finish_task');
    expect(chat.used).toBe(2);
  });

  it('throws a clear FabricError when the re-run asks for more turns than the run recorded', async () => {
    const chat = new ReplayChatClient(RECORDED);
    await chat.complete(request());
    await chat.complete(request());
    const error = await chat.complete(request()).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('backend_error');
    expect((error as FabricError).message).toMatch(
      /replay diverged: the re-run asked for model turn 3, but run run-1 recorded only 2/,
    );
  });

  it('refuses a request whose signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stop'));
    const chat = new ReplayChatClient(RECORDED);
    await expect(chat.complete({ ...request(), signal: controller.signal })).rejects.toThrow('stop');
    expect(chat.used).toBe(0);
  });

  it('drives executeTask through the recorded run, with the tools run for real', async () => {
    const store = new MemoryRunLogStore();
    const pack = await buildPack({
      specialist: 'units',
      config: v.parse(SpecialistSchema, { builder: 'packs/example/pack.ts#buildPack' }),
      workspace: undefined,
      settings: { searxngUrl: undefined },
    });
    const result = await executeTask({
      specialist: 'units',
      task: 'Convert 3 km to miles',
      pack,
      chat: new ReplayChatClient(RECORDED),
      model: { id: 'qwen3:8b', backend: 'replay' },
      runLogStore: store,
      limits: { maxSteps: 30, budgetMs: 60_000, recoverTextToolCalls: true },
      workspace: null,
      configDigest: 'abc',
      fabricVersion: '0.1.0',
      clock: systemClock,
      signal: new AbortController().signal,
      runId: 'replay-1',
    });
    expect(result).toMatchObject({
      status: 'succeeded',
      steps: 2,
      payload: { summary: 'Converted.', answer: '1.864114 mi' },
      usage: { prompt_tokens: 30, completion_tokens: 3, total_tokens: 33 },
    });
    const events = (await store.read('replay-1')).events;
    expect(events.find((event) => event.kind === 'tool_result')).toMatchObject({
      call_id: 'c1',
      result: '3 km = 1.864114 mi',
    });
  });
});

import { describe, expect, it } from 'vitest';
import type { ChatStreamEvent } from '../../../src/application/ports.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { ChatMessage } from '../../../src/domain/messages.ts';
import { contextWindowFor } from '../../../src/infrastructure/llm/ollama/context-window.ts';
import { OllamaChatClient } from '../../../src/infrastructure/llm/ollama/ollama-chat-client.ts';
import { READ_FILE, RETRY, ask, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

function client(url: string, trainedContext?: number, loadedContext?: number): OllamaChatClient {
  return new OllamaChatClient({
    baseUrl: url,
    retry: RETRY,
    requestTimeoutMs: 5000,
    contextOf: () => ({ trainedContext, loadedContext }),
  });
}

async function failureOf(promise: Promise<unknown>): Promise<FabricError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
  return error;
}

const LLAMA = { id: 'llama3.2:latest', toolUse: true, maxContextLength: 131072 };

describe('Ollama native chat client', () => {
  it('streams NDJSON into a turn: text, whole tool calls, usage from prompt_eval_count / eval_count', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [
        {
          reply: {
            content: 'Reading it now.',
            toolCalls: [{ name: 'read_file', arguments: { path: 'Cargo.toml' } }],
            usage: { prompt: 120, completion: 15 },
          },
        },
      ],
    });
    const events: ChatStreamEvent[] = [];
    const turn = await client(server.url).complete(ask('llama3.2'), (event) => events.push(event));
    expect(turn).toMatchObject({
      content: 'Reading it now.',
      finishReason: 'tool_calls',
      usage: { promptTokens: 120, completionTokens: 15, totalTokens: 135 },
      attempts: 1,
      backend: `ollama ${server.url}`,
    });
    expect(turn.toolCalls).toEqual([
      { id: expect.stringMatching(/^call_/), name: 'read_file', arguments: '{"path":"Cargo.toml"}' },
    ]);
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => (e.type === 'text' ? e.text : ''))
        .join(''),
    ).toBe('Reading it now.');
    expect(events).toContainEqual({ type: 'tool_call_started', name: 'read_file' });
  });

  it('sends tool-call arguments back as objects and tool results with tool_name', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [{ reply: { content: 'done' } }],
    });
    const messages: ChatMessage[] = [
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [{ id: 'call_1', name: 'read_file', arguments: '{"path":"a"}' }],
      },
      { role: 'tool', toolCallId: 'call_1', name: 'read_file', content: 'fn main() {}' },
    ];
    const turn = await client(server.url).complete({ ...ask('llama3.2'), messages });
    expect(turn.content).toBe('done');
    const body = server.chatRequests()[0]?.body as { messages: unknown[]; tools: unknown[]; stream: boolean };
    expect(body.messages[1]).toEqual({
      role: 'assistant',
      content: '',
      tool_calls: [{ id: 'call_1', function: { name: 'read_file', arguments: { path: 'a' } } }],
    });
    expect(body.messages[2]).toEqual({
      role: 'tool',
      content: 'fn main() {}',
      tool_name: 'read_file',
      tool_call_id: 'call_1',
    });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: { name: 'read_file', description: 'Reads a file', parameters: READ_FILE.parameters },
      },
    ]);
    expect(body.stream).toBe(true);
  });

  it('asks for the window the request needs: at least 8192, more for a long conversation, never above the trained length', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [{ reply: { content: 'a' } }, { reply: { content: 'b' } }, { reply: { content: 'c' } }],
    });
    await client(server.url, 131072).complete(ask('llama3.2'));
    const long = 'x'.repeat(60_000); // ~20k tokens at three characters a token
    await client(server.url, 131072).complete(ask('llama3.2', long));
    await client(server.url, 16384).complete(ask('llama3.2', long));
    const sent = server
      .chatRequests()
      .map((r) => r.body as { options: { num_ctx: number }; truncate: boolean });
    expect(sent.map((b) => b.options.num_ctx)).toEqual([8192, 32768, 16384]);
    // Servers >= 0.12.4 then refuse an oversized prompt instead of dropping messages silently.
    expect(sent.every((b) => b.truncate === false)).toBe(true);
  });

  it("stays under the profile's context_length, sends its sampler, and says which limit a full window hit", async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [
        { reply: { content: 'a', usage: { prompt: 100, completion: 1 } } },
        { reply: { content: 'cut', usage: { prompt: 12000, completion: 5 } } },
      ],
    });
    const settings = { contextLength: 12000, topK: 40, minP: 0.05, maxOutputTokens: 512 };
    await client(server.url, 131072).complete({ ...ask('llama3.2', 'x'.repeat(60_000)), settings });
    const error = await failureOf(
      client(server.url, 131072).complete({ ...ask('llama3.2', 'x'.repeat(60_000)), settings }),
    );
    const body = server.chatRequests()[0]?.body as { options: Record<string, number>; think?: unknown };
    expect(body.options).toMatchObject({ num_ctx: 12000, top_k: 40, min_p: 0.05, num_predict: 512 });
    expect(body).not.toHaveProperty('think');
    expect(error.code).toBe('context_overflow');
    expect(error.message).toMatch(/target window caps the context at 12000 tokens: raise context_length/);
  });

  it('keeps a larger window the model is already loaded with, so Ollama does not reload it', () => {
    expect(contextWindowFor(100, { loadedContext: 32768, trainedContext: 131072 })).toBe(32768);
    expect(contextWindowFor(100, {})).toBe(8192);
    expect(contextWindowFor(100, { trainedContext: 4096 })).toBe(4096);
  });

  it('fails with context_overflow when the prompt filled the window (Ollama truncated it), without retrying', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [{ reply: { content: 'I only saw the end', usage: { prompt: 8192, completion: 5 } } }],
    });
    const error = await failureOf(client(server.url).complete(ask('llama3.2')));
    expect(error.code).toBe('context_overflow');
    expect(error.message).toContain('8192 prompt tokens, num_ctx 8192');
    expect(error.message).toContain('"llama3.2"');
    expect(server.chatRequests()).toHaveLength(1);
  });

  it("maps Ollama's refusal of an oversized prompt (truncate: false) to context_overflow", async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [{ status: 400, body: { error: 'the input length exceeds the context length' } }],
    });
    const error = await failureOf(client(server.url).complete(ask('llama3.2')));
    expect(error.code).toBe('context_overflow');
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('fails at once on "does not support tools", naming the model: one request, no retry', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [{ id: 'deepseek-r1:7b', toolUse: false }],
      script: [{ reply: { content: 'never sent' } }],
    });
    const error = await failureOf(client(server.url).complete(ask('deepseek-r1:7b')));
    expect(error.code).toBe('model_lacks_tools');
    expect(error.message).toContain('Model "deepseek-r1:7b"');
    expect(error.message).toContain('registry.ollama.ai/library/deepseek-r1:7b does not support tools');
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('retries a 503 and a stream cut short, then succeeds', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [
        { status: 503, body: { error: 'server busy, please try again.  maximum pending requests exceeded' } },
        { cutAfterChunks: 1, reply: { content: 'partial answer here' } },
        { reply: { content: 'whole' } },
      ],
    });
    const events: ChatStreamEvent[] = [];
    const turn = await new OllamaChatClient({
      baseUrl: server.url,
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
      requestTimeoutMs: 5000,
    }).complete(ask('llama3.2'), (e) => events.push(e));
    expect(turn).toMatchObject({ content: 'whole', attempts: 3 });
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(2);
  });

  it('treats an error line inside the stream as a failed attempt and gives up as backend_unavailable', async () => {
    const server = await fake({
      flavor: 'ollama',
      models: [LLAMA],
      script: [
        { sseError: { error: 'an error was encountered while running the model' } },
        { sseError: { error: 'an error was encountered while running the model' } },
      ],
    });
    const error = await failureOf(client(server.url).complete(ask('llama3.2')));
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain('an error was encountered while running the model');
    expect(server.chatRequests()).toHaveLength(2);
  });
});

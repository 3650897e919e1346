import { APIConnectionTimeoutError, type APIError, BadRequestError } from 'openai/core/error';
import { describe, expect, it } from 'vitest';
import type { ChatStreamEvent } from '../../../src/application/ports.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { ChatTransport } from '../../../src/infrastructure/llm/chat-transport.ts';
import { fetchTransport } from '../../../src/infrastructure/llm/fetch-transport.ts';
import { nodeHttpTransport } from '../../../src/infrastructure/llm/node-http-transport.ts';
import {
  OpenAiChatClient,
  type OpenAiChatClientOptions,
} from '../../../src/infrastructure/llm/openai-chat-client.ts';
import { READ_FILE, RETRY, ask, closedPortUrl, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

const MODEL = { id: 'qwen/qwen3-coder-30b', toolUse: true };

async function failureOf(promise: Promise<unknown>): Promise<FabricError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
  return error;
}

// The same behaviour over each transport: node:http on Node, fetch on Deno.
const TRANSPORTS: ReadonlyArray<[string, ChatTransport]> = [
  ['node:http', nodeHttpTransport],
  ['fetch', fetchTransport],
];

describe.each(TRANSPORTS)('OpenAI-compatible chat client over %s', (_name, transport) => {
  const client = (url: string, options: Partial<OpenAiChatClientOptions> = {}) =>
    new OpenAiChatClient({
      backend: 'lm_studio',
      baseUrl: url,
      retry: RETRY,
      requestTimeoutMs: 5000,
      transport,
      ...options,
    });

  it('streams a turn: text, argument fragments joined into calls, usage, and events as they come', async () => {
    const server = await fake({
      flavor: 'lm_studio',
      models: [MODEL],
      script: [
        {
          reply: {
            content: 'Reading it — now.',
            toolCalls: [{ name: 'read_file', arguments: { path: 'Cargo.toml' } }],
            usage: { prompt: 90, completion: 12 },
          },
        },
      ],
    });
    const events: ChatStreamEvent[] = [];
    const turn = await client(server.url).complete(ask(MODEL.id), (event) => events.push(event));
    expect(turn).toMatchObject({
      content: 'Reading it — now.',
      finishReason: 'tool_calls',
      usage: { promptTokens: 90, completionTokens: 12, totalTokens: 102 },
      attempts: 1,
      backend: `lm_studio ${server.url}`,
    });
    expect(turn.toolCalls).toEqual([
      { id: expect.any(String), name: 'read_file', arguments: '{"path":"Cargo.toml"}' },
    ]);
    const text = events.flatMap((e) => (e.type === 'text' ? [e.text] : [])).join('');
    expect(text).toBe('Reading it — now.');
    expect(events).toContainEqual({ type: 'tool_call_started', name: 'read_file' });
  });

  it('sends the model, the tools in the tools parameter, a streamed request with usage, and no key unless one is set', async () => {
    const server = await fake({
      flavor: 'lm_studio',
      models: [MODEL],
      script: [{ reply: { content: 'a' } }, { reply: { content: 'b' } }],
    });
    await client(server.url, { temperature: 0.2 }).complete(ask(MODEL.id));
    await client(server.url, { apiKey: 's3cret' }).complete(ask(MODEL.id));
    const [first, second] = server.chatRequests();
    expect(first?.body).toMatchObject({
      model: MODEL.id,
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0.2,
      tools: [{ type: 'function', function: { name: READ_FILE.name, parameters: READ_FILE.parameters } }],
    });
    expect(first?.headers.authorization).toBeUndefined();
    expect(second?.headers.authorization).toBe('Bearer s3cret');
  });

  it('retries a 503 and a stream cut short, then succeeds', async () => {
    const server = await fake({
      flavor: 'lm_studio',
      models: [MODEL],
      script: [
        { status: 503, body: { error: 'busy' } },
        { cutAfterChunks: 2, reply: { content: 'partial answer here' } },
        { reply: { content: 'whole' } },
      ],
    });
    const events: ChatStreamEvent[] = [];
    const turn = await client(server.url, {
      retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
    }).complete(ask(MODEL.id), (e) => events.push(e));
    expect(turn).toMatchObject({ content: 'whole', attempts: 3 });
    expect(events.filter((e) => e.type === 'retry')).toHaveLength(2);
  });

  it("fails at once on LM Studio's invalid model answer, with the SDK's BadRequestError as the cause", async () => {
    const server = await fake({ flavor: 'lm_studio', models: [MODEL] });
    const error = await failureOf(client(server.url).complete(ask('no/such-model')));
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain('Invalid model identifier "no/such-model"');
    expect(error.cause).toBeInstanceOf(BadRequestError);
    expect((error.cause as APIError).status).toBe(400);
    expect(server.chatRequests()).toHaveLength(1);
  });

  it('takes an error event inside the stream as a failed attempt, and gives up as backend_unavailable', async () => {
    const sseError = { error: { message: 'Model crashed while generating' } };
    const server = await fake({
      flavor: 'lm_studio',
      models: [MODEL],
      script: [{ sseError }, { sseError }],
    });
    const error = await failureOf(client(server.url).complete(ask(MODEL.id)));
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain('Model crashed while generating');
    expect(server.chatRequests()).toHaveLength(2);
  });

  it('names the unreachable server after the bounded retries', async () => {
    const url = await closedPortUrl();
    const error = await failureOf(client(url).complete(ask(MODEL.id)));
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain(`cannot reach ${url}`);
  });

  it('gives up on a server that never answers after the request timeout, as the SDK times out', async () => {
    const server = await fake({
      flavor: 'lm_studio',
      models: [MODEL],
      script: [{ hang: true }, { hang: true }],
    });
    const retries: ChatStreamEvent[] = [];
    const error = await failureOf(
      client(server.url, { requestTimeoutMs: 50 }).complete(ask(MODEL.id), (e) => retries.push(e)),
    );
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain(new APIConnectionTimeoutError().message);
    expect(retries).toHaveLength(1);
  });

  it('ends with run_cancelled when the signal aborts while the server is thinking', async () => {
    const server = await fake({ flavor: 'lm_studio', models: [MODEL], script: [{ hang: true }] });
    const controller = new AbortController();
    const pending = client(server.url).complete(ask(MODEL.id, 'x', controller.signal));
    while (server.chatRequests().length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    controller.abort();
    expect((await failureOf(pending)).code).toBe('run_cancelled');
    expect(server.chatRequests()).toHaveLength(1);
  });
});

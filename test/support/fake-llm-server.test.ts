import OpenAI, { APIError } from 'openai';
import type { ChatCompletionChunk } from 'openai/resources/chat/completions';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLlmServer, type FakeLlmServerOptions, startFakeLlmServer } from './fake-llm-server.ts';

const running: FakeLlmServer[] = [];

async function start(options: FakeLlmServerOptions): Promise<{ server: FakeLlmServer; client: OpenAI }> {
  const server = await startFakeLlmServer(options);
  running.push(server);
  // No retries: a retried error would consume the next scripted turn.
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'not-needed', maxRetries: 0 });
  return { server, client };
}

afterEach(async () => {
  await Promise.all(running.splice(0).map((s) => s.stop()));
});

const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'read_file', parameters: { type: 'object', properties: { path: { type: 'string' } } } },
  },
];

const twoCalls = {
  content: 'Let me look at both files.',
  toolCalls: [
    { name: 'read_file', arguments: { path: 'src/main.rs' } },
    { name: 'read_file', arguments: '{"path":"Cargo.toml"}' },
  ],
};

interface Assembled {
  content: string;
  calls: { id: string; name: string; arguments: string; argumentDeltas: number }[];
  finishReason: string | null;
  usage: OpenAI.CompletionUsage | null;
  chunks: ChatCompletionChunk[];
}

/** A strict assembler: concatenates fragments by index and treats an empty name as absent. */
async function assemble(stream: AsyncIterable<ChatCompletionChunk>): Promise<Assembled> {
  const out: Assembled = { content: '', calls: [], finishReason: null, usage: null, chunks: [] };
  for await (const chunk of stream) {
    out.chunks.push(chunk);
    if (chunk.usage) out.usage = chunk.usage;
    const choice = chunk.choices[0];
    if (!choice) continue;
    out.content += choice.delta.content ?? '';
    if (choice.finish_reason) out.finishReason = choice.finish_reason;
    for (const delta of choice.delta.tool_calls ?? []) {
      out.calls[delta.index] ??= { id: '', name: '', arguments: '', argumentDeltas: 0 };
      const call = out.calls[delta.index]!;
      if (delta.id) call.id = delta.id;
      if (delta.function?.name) call.name = delta.function.name;
      if (delta.function?.arguments) {
        call.arguments += delta.function.arguments;
        call.argumentDeltas += 1;
      }
    }
  }
  return out;
}

describe('fake LLM server: OpenAI-compatible streaming', () => {
  it('streams OpenAI-style fragments that the SDK assembles into the scripted tool calls', async () => {
    const { server, client } = await start({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [{ reply: twoCalls, stream: 'openai' }],
    });
    const stream = client.chat.completions.stream({
      model: 'qwen/qwen3-coder-30b',
      messages: [{ role: 'user', content: 'read them' }],
      tools,
      stream_options: { include_usage: true },
    });
    const final = await stream.finalChatCompletion();
    const message = final.choices[0]?.message;
    expect(message?.content).toBe('Let me look at both files.');
    expect(
      message?.tool_calls?.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : [])),
    ).toEqual([
      ['read_file', '{"path":"src/main.rs"}'],
      ['read_file', '{"path":"Cargo.toml"}'],
    ]);
    expect(message?.tool_calls?.[0]?.id).toMatch(/^call_[a-z0-9]{24}$/);
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(final.usage?.total_tokens).toBeGreaterThan(0);
    expect(server.chatRequests()[0]?.body).toMatchObject({ model: 'qwen/qwen3-coder-30b', stream: true });
  });

  it('sends the first tool delta with id and empty arguments, then fragments, delta:{} and a usage chunk', async () => {
    const { client } = await start({ flavor: 'lm_studio', script: [{ reply: twoCalls, stream: 'openai' }] });
    const result = await assemble(
      await client.chat.completions.create({
        model: 'any',
        messages: [{ role: 'user', content: 'go' }],
        stream: true,
        stream_options: { include_usage: true },
      }),
    );
    expect(result.content).toBe('Let me look at both files.');
    expect(result.calls.map((c) => c.arguments)).toEqual(['{"path":"src/main.rs"}', '{"path":"Cargo.toml"}']);
    expect(result.calls.every((c) => c.argumentDeltas > 1)).toBe(true);
    const heads = result.chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []).filter((d) => d.id);
    expect(heads[0]).toMatchObject({
      index: 0,
      type: 'function',
      function: { name: 'read_file', arguments: '' },
    });
    const finish = result.chunks.find((c) => c.choices[0]?.finish_reason);
    expect(finish?.choices[0]?.delta).toEqual({});
    expect(result.chunks.at(-1)?.choices).toEqual([]);
    expect(result.usage?.prompt_tokens).toBeGreaterThan(0);
  });

  it('streams the legacy LM Studio style: numeric ids, empty names in fragments, no role on tool chunks', async () => {
    const { client } = await start({
      flavor: 'lm_studio',
      models: [{ id: 'qwen3-30b-a3b-128k' }],
      script: [{ reply: { toolCalls: [{ name: 'list_dir', arguments: { path: '.', depth: 2 } }] } }],
    });
    const result = await assemble(
      await client.chat.completions.create({ model: 'qwen3-30b-a3b-128k', messages: [], stream: true }),
    );
    expect(result.calls).toEqual([
      expect.objectContaining({ name: 'list_dir', arguments: '{"path":".","depth":2}' }),
    ]);
    expect(result.calls[0]?.id).toMatch(/^\d+$/);
    expect(result.finishReason).toBe('tool_calls');
    const toolChunks = result.chunks.filter((c) => c.choices[0]?.delta.tool_calls);
    expect(toolChunks.every((c) => c.choices[0]?.delta.role === undefined)).toBe(true);
    expect(toolChunks[1]?.choices[0]?.delta.tool_calls?.[0]).toMatchObject({
      type: 'function',
      function: { name: '' },
    });
    expect(result.chunks[0]?.system_fingerprint).toBe('qwen3-30b-a3b-128k');
    expect(result.usage).toBeNull();
  });

  it('streams the Ollama style: the whole call in one delta and role on every chunk', async () => {
    const { client } = await start({
      flavor: 'ollama',
      models: [{ id: 'llama3.2:latest', toolUse: true }],
      script: [
        { reply: { content: 'Checking now.', toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] } },
      ],
    });
    const result = await assemble(
      await client.chat.completions.create({ model: 'llama3.2', messages: [], tools, stream: true }),
    );
    expect(result.content).toBe('Checking now.');
    expect(result.calls).toEqual([
      {
        id: expect.stringMatching(/^call_[a-z0-9]{8}$/),
        name: 'read_file',
        arguments: '{"path":"a"}',
        argumentDeltas: 1,
      },
    ]);
    expect(result.chunks.every((c) => c.choices[0]?.delta.role === 'assistant')).toBe(true);
    expect(result.chunks.every((c) => c.system_fingerprint === 'fp_ollama' && c.model === 'llama3.2')).toBe(
      true,
    );
    expect(result.finishReason).toBe('tool_calls');
  });
});

describe('fake LLM server: non-streaming replies and errors', () => {
  it('answers non-streaming in each flavor shape, with tool_calls: [] always present on LM Studio', async () => {
    const lm = await start({
      flavor: 'lm_studio',
      script: [{ reply: { content: 'hi' } }, { reply: twoCalls }],
    });
    const text = await lm.client.chat.completions.create({ model: 'm', messages: [] });
    expect(text.choices[0]?.message).toMatchObject({ content: 'hi', tool_calls: [] });
    expect(text.choices[0]?.finish_reason).toBe('stop');
    const withTools = await lm.client.chat.completions.create({ model: 'm', messages: [] });
    expect(withTools.choices[0]?.message.tool_calls?.[1]).toMatchObject({
      id: expect.stringMatching(/^\d+$/),
      function: { name: 'read_file', arguments: '{"path":"Cargo.toml"}' },
    });
    const ol = await start({
      flavor: 'ollama',
      script: [{ reply: { ...twoCalls, usage: { prompt: 195, completion: 144 } } }],
    });
    const answer = await ol.client.chat.completions.create({ model: 'qwen3', messages: [] });
    expect(answer.system_fingerprint).toBe('fp_ollama');
    expect(answer.choices[0]?.finish_reason).toBe('tool_calls');
    expect(answer.usage).toEqual({ prompt_tokens: 195, completion_tokens: 144, total_tokens: 339 });
  });

  it('answers a scripted 503 with the body verbatim', async () => {
    const body = { error: 'server busy, please try again.  maximum pending requests exceeded' };
    const { client } = await start({ flavor: 'ollama', script: [{ status: 503, body }] });
    const error = await client.chat.completions.create({ model: 'x', messages: [] }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).status).toBe(503);
    expect((error as APIError).error).toBe(body.error);
  });

  it('refuses tools for a model without them (400, both Ollama APIs) without consuming the script', async () => {
    const { server, client } = await start({
      flavor: 'ollama',
      models: [{ id: 'deepseek-r1', toolUse: false }],
      script: [{ reply: { content: 'plain answer' } }],
    });
    const error = (await client.chat.completions
      .create({ model: 'deepseek-r1', messages: [], tools })
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(400);
    expect(error.error).toEqual({
      message: 'registry.ollama.ai/library/deepseek-r1:latest does not support tools',
      type: 'invalid_request_error',
      param: null,
      code: null,
    });
    const native = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'deepseek-r1', messages: [], tools }),
    });
    expect(native.status).toBe(400);
    expect(await native.json()).toEqual({
      error: 'registry.ollama.ai/library/deepseek-r1:latest does not support tools',
    });
    const ok = await client.chat.completions.create({ model: 'deepseek-r1', messages: [] });
    expect(ok.choices[0]?.message.content).toBe('plain answer');
  });

  it('answers unknown models with each flavor’s model-not-found body', async () => {
    const lm = await start({ flavor: 'lm_studio', models: [{ id: 'qwen/qwen3-coder-30b' }] });
    const lmError = (await lm.client.chat.completions
      .create({ model: 'o4-mini', messages: [] })
      .catch((e: unknown) => e)) as APIError;
    expect(lmError.status).toBe(400);
    expect(lmError.code).toBe('model_not_found');
    const ol = await start({ flavor: 'ollama', models: [{ id: 'llama3.2:latest' }] });
    const olError = (await ol.client.chat.completions
      .create({ model: 'qwen2.5:7b', messages: [] })
      .catch((e: unknown) => e)) as APIError;
    expect(olError.status).toBe(404);
    expect(olError.message).toContain("model 'qwen2.5:7b' not found");
  });

  it('fails loudly with 500 when the script is exhausted', async () => {
    const { client } = await start({ flavor: 'lm_studio' });
    const error = (await client.chat.completions
      .create({ model: 'm', messages: [] })
      .catch((e: unknown) => e)) as APIError;
    expect(error.status).toBe(500);
    expect(error.message).toContain('fake server: script exhausted');
  });

  it('cuts a stream after the given chunks with no finish_reason and no [DONE]', async () => {
    const { client } = await start({
      flavor: 'lm_studio',
      script: [{ cutAfterChunks: 3, reply: twoCalls, stream: 'openai' }],
    });
    const seen: ChatCompletionChunk[] = [];
    const stream = await client.chat.completions.create({ model: 'm', messages: [], stream: true });
    const error = await (async () => {
      for await (const chunk of stream) seen.push(chunk);
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(seen).toHaveLength(3);
    expect(seen.every((c) => c.choices[0]?.finish_reason === null)).toBe(true);
  });

  it('raises an APIError for an LM Studio `event: error` frame sent with HTTP 200', async () => {
    const message =
      'Input does not fit in context length. The input has 31430 tokens, but the context length only supports 30000 tokens.';
    const { client } = await start({
      flavor: 'lm_studio',
      script: [{ sseError: { error: { message }, message } }],
    });
    const stream = await client.chat.completions.create({ model: 'm', messages: [], stream: true });
    const error = await (async () => {
      for await (const _ of stream) {
        // draining
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect((error as APIError).message).toContain('Input does not fit in context length');
  });

  it('hangs until the client aborts, and delays a reply by delayMs', async () => {
    const { client } = await start({
      flavor: 'lm_studio',
      script: [{ hang: true }, { reply: { content: 'late' }, delayMs: 30 }],
    });
    const aborted = await client.chat.completions
      .create({ model: 'm', messages: [] }, { signal: AbortSignal.timeout(50) })
      .catch((e: unknown) => e);
    expect(aborted).toBeInstanceOf(Error);
    const started = Date.now();
    const late = await client.chat.completions.create({ model: 'm', messages: [] });
    expect(late.choices[0]?.message.content).toBe('late');
    expect(Date.now() - started).toBeGreaterThanOrEqual(25);
  });
});

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: unknown }> {
  const response = await fetch(url, init);
  return { status: response.status, body: await response.json() };
}

describe('fake LLM server: catalogs and probes', () => {
  const lmModels = [
    {
      id: 'qwen/qwen3-coder-30b',
      toolUse: true,
      paramSize: '30B',
      contextLength: 8192,
      maxContextLength: 262144,
    },
    { id: 'mistralai/mistral-small-3.2', type: 'vlm' as const, loaded: false },
    { id: 'text-embedding-nomic-embed-text-v1.5', type: 'embedding' as const },
  ];

  it('lists LM Studio models on /v1/models without `created`, and on /api/v0 with v0 fields', async () => {
    const { server, client } = await start({ flavor: 'lm_studio', models: lmModels });
    const listed = [];
    for await (const model of client.models.list()) listed.push(model);
    expect(listed.map((m) => m.id)).toEqual(lmModels.map((m) => m.id));
    expect(listed.every((m) => !Object.hasOwn(m, 'created') && m.owned_by === 'organization_owner')).toBe(
      true,
    );
    const v0 = await getJson(`${server.url}/api/v0/models`);
    const data = (v0.body as { data: Record<string, unknown>[] }).data;
    expect(data[0]).toMatchObject({
      type: 'llm',
      state: 'loaded',
      capabilities: ['tool_use'],
      max_context_length: 262144,
      loaded_context_length: 8192,
    });
    expect(data[1]).toMatchObject({ type: 'vlm', state: 'not-loaded' });
    expect(data[1]).not.toHaveProperty('capabilities');
    expect(data[1]).not.toHaveProperty('loaded_context_length');
    expect(data[2]).toMatchObject({ type: 'embeddings' });
    const one = await getJson(`${server.url}/api/v0/models/qwen/qwen3-coder-30b`);
    expect(one.body).toMatchObject({ id: 'qwen/qwen3-coder-30b', object: 'model' });
  });

  it('serves /api/v1/models only when the v1 API is on, and answers unknown routes with 200 and an error', async () => {
    const old = await start({ flavor: 'lm_studio', models: lmModels });
    expect(await getJson(`${old.server.url}/api/v1/models`)).toEqual({
      status: 200,
      body: { error: 'Unexpected endpoint or method. (GET /api/v1/models)' },
    });
    expect(await getJson(`${old.server.url}/api/tags`)).toEqual({
      status: 200,
      body: { error: 'Unexpected endpoint or method. (GET /api/tags)' },
    });
    const modern = await start({ flavor: 'lm_studio', models: lmModels, lmStudioV1Api: true });
    const { body } = await getJson(`${modern.server.url}/api/v1/models`);
    const models = (body as { models: Record<string, unknown>[] }).models;
    expect(models[0]).toMatchObject({
      type: 'llm',
      key: 'qwen/qwen3-coder-30b',
      params_string: '30B',
      max_context_length: 262144,
      capabilities: { vision: false, trained_for_tool_use: true },
      loaded_instances: [{ id: 'qwen/qwen3-coder-30b', config: { context_length: 8192 } }],
    });
    expect(models[1]).toMatchObject({
      capabilities: { vision: true, trained_for_tool_use: false },
      loaded_instances: [],
    });
    expect(models[2]).toMatchObject({ type: 'embedding', params_string: null });
    expect(models[2]).not.toHaveProperty('capabilities');
  });

  const olModels = [
    {
      id: 'llama3.2:latest',
      toolUse: true,
      paramSize: '3.2B',
      contextLength: 8192,
      maxContextLength: 131072,
    },
    { id: 'deepseek-r1:7b', toolUse: false, paramSize: '7.6B', loaded: false },
    { id: 'gemma:2b', paramSize: '2B', loaded: false },
    { id: 'nomic-embed-text:latest', type: 'embedding' as const, paramSize: '137M', loaded: false },
  ];

  it('answers Ollama probes, /api/tags, /api/show, /api/ps and /v1/models with real fields', async () => {
    const { server, client } = await start({ flavor: 'ollama', models: olModels });
    const root = await fetch(`${server.url}/`);
    expect([root.status, await root.text()]).toEqual([200, 'Ollama is running']);
    const missing = await fetch(`${server.url}/api/nope`);
    expect([missing.status, await missing.text()]).toEqual([404, '404 page not found']);
    expect((await getJson(`${server.url}/api/version`)).body).toEqual({ version: '0.12.6' });

    const tags = (await getJson(`${server.url}/api/tags`)).body as { models: Record<string, unknown>[] };
    expect(tags.models[0]).toMatchObject({
      name: 'llama3.2:latest',
      details: { parameter_size: '3.2B', family: 'llama' },
    });
    expect(tags.models.some((m) => 'capabilities' in m)).toBe(false);

    const show = async (model: string) =>
      getJson(`${server.url}/api/show`, { method: 'POST', body: JSON.stringify({ model }) });
    const llama = (await show('llama3.2')).body as {
      capabilities: string[];
      model_info: Record<string, unknown>;
    };
    expect(llama.capabilities).toEqual(['completion', 'tools']);
    expect(llama.model_info).toMatchObject({
      'general.architecture': 'llama',
      'llama.context_length': 131072,
    });
    expect(((await show('deepseek-r1:7b')).body as { capabilities: string[] }).capabilities).toEqual([
      'completion',
    ]);
    expect((await show('gemma:2b')).body).not.toHaveProperty('capabilities');
    expect(((await show('nomic-embed-text')).body as { capabilities: string[] }).capabilities).toEqual([
      'embedding',
    ]);
    expect(await show('llama9')).toEqual({ status: 404, body: { error: "model 'llama9:latest' not found" } });

    const ps = (await getJson(`${server.url}/api/ps`)).body as { models: Record<string, unknown>[] };
    expect(ps.models).toHaveLength(1);
    expect(ps.models[0]).toMatchObject({ name: 'llama3.2:latest', context_length: 8192 });

    const listed = [];
    for await (const model of client.models.list()) listed.push(model);
    expect(listed[0]).toEqual({
      id: 'llama3.2:latest',
      object: 'model',
      created: expect.any(Number),
      owned_by: 'library',
    });
  });

  it('adds capabilities to /api/tags from Ollama 0.30.0 on', async () => {
    const { server } = await start({ flavor: 'ollama', models: olModels, ollamaVersion: '0.30.2' });
    const tags = (await getJson(`${server.url}/api/tags`)).body as { models: Record<string, unknown>[] };
    expect(tags.models[0]).toMatchObject({
      capabilities: ['completion', 'tools'],
      details: { context_length: 131072 },
    });
  });
});

describe('fake LLM server: Ollama native /api/chat', () => {
  it('streams NDJSON with object arguments, then a done line with nanosecond stats', async () => {
    const { server } = await start({
      flavor: 'ollama',
      models: [{ id: 'llama3.2:latest', toolUse: true }],
      script: [
        { reply: { content: 'On it.', toolCalls: [{ name: 'get_weather', arguments: '{"city":"Tokyo"}' }] } },
      ],
    });
    const response = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama3.2', messages: [{ role: 'user', content: 'weather?' }], tools }),
    });
    expect(response.headers.get('content-type')).toBe('application/x-ndjson');
    const lines = (await response.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const calls = lines.flatMap((l) => (l.message as { tool_calls?: unknown[] }).tool_calls ?? []);
    expect(calls).toEqual([
      {
        id: expect.stringMatching(/^call_[a-z0-9]{8}$/),
        function: { index: 0, name: 'get_weather', arguments: { city: 'Tokyo' } },
      },
    ]);
    expect(lines.at(-1)).toMatchObject({
      model: 'llama3.2',
      done: true,
      done_reason: 'stop',
      prompt_eval_count: expect.any(Number),
      eval_duration: expect.any(Number),
    });
    expect(lines.slice(0, -1).every((l) => l.done === false)).toBe(true);
  });

  it('answers stream:false with one object, and rejects string arguments echoed back with the Go error', async () => {
    const { server } = await start({
      flavor: 'ollama',
      script: [{ reply: { content: 'done', usage: { prompt: 169, completion: 15 } } }],
    });
    const post = (body: unknown) =>
      getJson(`${server.url}/api/chat`, { method: 'POST', body: JSON.stringify(body) });
    const echoed = await post({
      model: 'llama3.2',
      messages: [
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: '{"a":1}' } }] },
      ],
    });
    expect(echoed).toEqual({
      status: 400,
      body: {
        error:
          'json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function.arguments of type api.ToolCallFunctionArguments',
      },
    });
    const ok = await post({
      model: 'llama3.2',
      stream: false,
      messages: [
        { role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }] },
      ],
    });
    expect(ok).toEqual({
      status: 200,
      body: expect.objectContaining({
        message: { role: 'assistant', content: 'done' },
        done: true,
        prompt_eval_count: 169,
        eval_count: 15,
      }),
    });
    expect(server.chatRequests()).toHaveLength(2);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';

let server: FakeLlmServer;

afterEach(async () => {
  await server.stop();
});

async function chat(model: string): Promise<number> {
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }] }),
  });
  await response.text();
  return response.status;
}

async function loadedIds(): Promise<string[]> {
  const body = (await (await fetch(`${server.url}/api/v1/models`)).json()) as {
    models: { key: string; loaded_instances: unknown[] }[];
  };
  return body.models.filter((m) => m.loaded_instances.length > 0).map((m) => m.key);
}

async function post(path: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

describe('the fake LM Studio’s model loads', () => {
  it('loads JIT with Auto-Evict: one JIT-loaded model at a time, each load recorded', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      jitAutoEvict: true,
      respond: () => ({ reply: { content: 'ok' } }),
      models: [
        { id: 'lab/a', loaded: false, contextLength: 4096 },
        { id: 'lab/b', loaded: false, contextLength: 4096 },
        { id: 'lab/kept', loaded: true },
      ],
    });
    expect(await chat('lab/a')).toBe(200);
    expect(await loadedIds()).toEqual(['lab/a', 'lab/kept']);
    expect(await chat('lab/a')).toBe(200);
    expect(await chat('lab/b')).toBe(200);
    // b evicted a; the model loaded by hand stays.
    expect(await loadedIds()).toEqual(['lab/b', 'lab/kept']);
    expect(await chat('lab/a')).toBe(200);
    expect(server.loads().map((load) => [load.model, load.via])).toEqual([
      ['lab/a', 'jit'],
      ['lab/b', 'jit'],
      ['lab/a', 'jit'],
    ]);
  });

  it('unloads an instance through POST /api/v1/models/unload, and answers 404 for one not loaded', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: 'lab/a', loaded: false, maxContextLength: 32768 }],
    });
    const loaded = await post('/api/v1/models/load', { model: 'lab/a', context_length: 8192 });
    expect(loaded).toMatchObject({ status: 200, body: { load_config: { context_length: 8192 } } });
    expect(server.loads()).toEqual([
      expect.objectContaining({ model: 'lab/a', via: 'api', contextLength: 8192 }),
    ]);
    expect(await post('/api/v1/models/unload', { instance_id: 'lab/a' })).toEqual({
      status: 200,
      body: { instance_id: 'lab/a' },
    });
    expect(await loadedIds()).toEqual([]);
    expect(server.unloads()).toEqual(['lab/a']);
    expect((await post('/api/v1/models/unload', { instance_id: 'lab/a' })).status).toBe(404);
  });
});

import { type AddressInfo, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { probeLmStudio } from '../../../src/infrastructure/llm/lmstudio/lmstudio-probe.ts';
import { OllamaCatalog } from '../../../src/infrastructure/llm/ollama/ollama-catalog.ts';
import { closedPortUrl, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

const MODELS = [
  {
    id: 'qwen/qwen3-coder-30b',
    toolUse: true,
    paramSize: '30B',
    contextLength: 8192,
    maxContextLength: 262144,
  },
  { id: 'mistralai/mistral-small-3.2', type: 'vlm' as const, loaded: false, paramSize: '24B' },
  { id: 'text-embedding-nomic-embed-text-v1.5', type: 'embedding' as const },
];

describe('LM Studio catalog', () => {
  it('reads /api/v1/models where the server has it: type, loaded instances, context, tool capability', async () => {
    const server = await fake({ flavor: 'lm_studio', models: MODELS, lmStudioV1Api: true });
    const probe = await probeLmStudio(server.url, 800);
    expect(probe).toMatchObject({ backend: 'lm_studio', baseUrl: server.url, ok: true, error: undefined });
    expect(probe.models).toEqual([
      expect.objectContaining({
        id: 'qwen/qwen3-coder-30b',
        type: 'llm',
        toolUse: true,
        loaded: true,
        paramsB: 30,
        contextLength: 8192,
        maxContextLength: 262144,
      }),
      expect.objectContaining({
        id: 'mistralai/mistral-small-3.2',
        type: 'vlm',
        toolUse: false,
        loaded: false,
        paramsB: 24,
      }),
      expect.objectContaining({
        id: 'text-embedding-nomic-embed-text-v1.5',
        type: 'embedding',
        toolUse: undefined,
      }),
    ]);
    expect(server.requests.map((r) => r.path)).toEqual(['/api/v1/models']);
  });

  it('does not trust the 200 an older server gives /api/v1/models: it reads the error field and falls back to /api/v0', async () => {
    const server = await fake({ flavor: 'lm_studio', models: MODELS });
    const probe = await probeLmStudio(server.url, 800);
    expect(server.requests.map((r) => r.path)).toEqual(['/api/v1/models', '/api/v0/models']);
    expect(probe.ok).toBe(true);
    expect(probe.models).toEqual([
      expect.objectContaining({
        id: 'qwen/qwen3-coder-30b',
        type: 'llm',
        toolUse: true,
        loaded: true,
        contextLength: 8192,
      }),
      // v0 leaves capabilities out when it does not know: unknown, not false.
      expect.objectContaining({
        id: 'mistralai/mistral-small-3.2',
        type: 'vlm',
        toolUse: undefined,
        loaded: false,
      }),
      expect.objectContaining({ type: 'embedding' }),
    ]);
  });

  it('reports a closed port as down, with the reason', async () => {
    const url = await closedPortUrl();
    const probe = await probeLmStudio(url, 800);
    expect(probe).toMatchObject({ ok: false, models: [] });
    expect(probe.error).toMatch(/fetch failed|ECONNREFUSED/);
  });

  it('gives up after the probe timeout on a server that accepts the connection and never answers', async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    const { port } = silent.address() as AddressInfo;
    const started = Date.now();
    const probe = await probeLmStudio(`http://127.0.0.1:${port}`, 150);
    silent.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(probe).toMatchObject({ ok: false, error: 'no answer within 150 ms' });
  });
});

describe('probes trust fields, not status codes', () => {
  it('does not take an LM Studio server for Ollama: /api/version answers 200 with an error field', async () => {
    const lm = await fake({ flavor: 'lm_studio', models: MODELS });
    const [probe] = await new OllamaCatalog(lm.url, 800).probe();
    expect(probe).toMatchObject({ backend: 'ollama', ok: false, models: [] });
    expect(probe?.error).toContain(
      'not an Ollama server (/api/version: HTTP 200, Unexpected endpoint or method.',
    );
  });
});

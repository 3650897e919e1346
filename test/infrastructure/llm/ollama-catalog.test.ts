import { describe, expect, it } from 'vitest';
import { OllamaCatalog } from '../../../src/infrastructure/llm/ollama/ollama-catalog.ts';
import { closedPortUrl, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

const MODELS = [
  { id: 'llama3.2:latest', toolUse: true, paramSize: '3.2B', contextLength: 8192, maxContextLength: 131072 },
  { id: 'deepseek-r1:7b', toolUse: false, paramSize: '7.6B', loaded: false },
  { id: 'gemma:2b', paramSize: '2B', loaded: false },
  { id: 'bge-m3:latest', type: 'embedding' as const, paramSize: '566.70M', loaded: false },
];

describe('Ollama catalog', () => {
  it('combines /api/tags, /api/show and /api/ps: capabilities, trained and loaded context, size', async () => {
    const server = await fake({ flavor: 'ollama', models: MODELS });
    const catalog = new OllamaCatalog(server.url, 800);
    const [probe] = await catalog.probe();
    expect(probe).toMatchObject({ backend: 'ollama', baseUrl: server.url, ok: true });
    expect(catalog.version).toBe('0.12.6');
    const byId = Object.fromEntries((probe?.models ?? []).map((model) => [model.id, model]));
    expect(byId['llama3.2:latest']).toMatchObject({
      type: 'llm',
      toolUse: true,
      loaded: true,
      paramsB: 3.2,
      contextLength: 8192,
      maxContextLength: 131072,
    });
    expect(byId['deepseek-r1:7b']).toMatchObject({
      type: 'llm',
      toolUse: false,
      loaded: false,
      contextLength: undefined,
    });
    // No capabilities field for this model: the capability is unknown, not false.
    expect(byId['gemma:2b']).toMatchObject({
      type: 'unknown',
      toolUse: undefined,
      loaded: false,
      paramsB: 2,
    });
    expect(byId['bge-m3:latest']).toMatchObject({ type: 'embedding' });
    expect(byId['bge-m3:latest']?.paramsB).toBeCloseTo(0.5667, 6);
    const shows = server.requests.filter((r) => r.path === '/api/show').map((r) => r.body);
    expect(shows).toHaveLength(4);
    expect(shows).toContainEqual({ model: 'llama3.2:latest' });
  });

  it('skips /api/show when /api/tags (Ollama >= 0.30) already carries capabilities and context', async () => {
    const server = await fake({ flavor: 'ollama', models: MODELS, ollamaVersion: '0.30.2' });
    const [probe] = await new OllamaCatalog(server.url, 800).probe();
    expect(probe?.models.find((m) => m.id === 'llama3.2:latest')).toMatchObject({
      toolUse: true,
      maxContextLength: 131072,
    });
    const shown = server.requests.filter((r) => r.path === '/api/show').map((r) => r.body);
    // Only gemma:2b, whose entry has no capabilities field, still needs /api/show.
    expect(shown).toEqual([{ model: 'gemma:2b' }]);
  });

  it('leaves capabilities unknown on servers older than 0.6.4, but still tells embedding models by family', async () => {
    const server = await fake({
      flavor: 'ollama',
      ollamaVersion: '0.5.7',
      models: [
        { id: 'qwen2.5:7b', toolUse: true },
        { id: 'nomic-embed-text:latest', type: 'embedding' as const },
      ],
    });
    const [probe] = await new OllamaCatalog(server.url, 800).probe();
    expect(probe?.models.map((m) => [m.id, m.type, m.toolUse])).toEqual([
      ['qwen2.5:7b', 'unknown', undefined],
      ['nomic-embed-text:latest', 'embedding', undefined],
    ]);
  });

  it('reports a server that is not running as down', async () => {
    const [probe] = await new OllamaCatalog(await closedPortUrl(), 800).probe();
    expect(probe).toMatchObject({ ok: false, models: [] });
    expect(probe?.error).toMatch(/fetch failed|ECONNREFUSED/);
  });
});

import { describe, expect, it } from 'vitest';
import type { BackendProbe, ModelCatalog } from '../../../src/application/ports.ts';
import { resolveModel } from '../../../src/application/models/resolve-model.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import { CompositeCatalog } from '../../../src/infrastructure/llm/composite-catalog.ts';
import { LlmBackends } from '../../../src/infrastructure/llm/llm-backends.ts';
import type { FakeModel } from '../../support/fake-llm-server.ts';
import { ask, closedPortUrl, fake, llmConfig, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

const LM_MODELS: FakeModel[] = [
  { id: 'qwen/qwen3-coder-30b', toolUse: true, paramSize: '30B' },
  { id: 'text-embedding-nomic-embed-text-v1.5', type: 'embedding' },
];
const OLLAMA_MODELS: FakeModel[] = [
  { id: 'qwen2.5-coder:7b', toolUse: true, paramSize: '7.6B', maxContextLength: 32768 },
  { id: 'nomic-embed-text:latest', type: 'embedding', paramSize: '137M' },
  { id: 'deepseek-r1:1.5b', toolUse: false, paramSize: '1.8B' },
];

async function setup(lm: 'up' | 'down', ollama: 'up' | 'down') {
  const lmServer =
    lm === 'up' ? await fake({ flavor: 'lm_studio', models: LM_MODELS, lmStudioV1Api: true }) : undefined;
  const olServer = ollama === 'up' ? await fake({ flavor: 'ollama', models: OLLAMA_MODELS }) : undefined;
  const backends = new LlmBackends(
    llmConfig({
      lm_studio_urls: [lmServer?.url ?? (await closedPortUrl())],
      ollama_url: olServer?.url ?? (await closedPortUrl()),
    }),
  );
  return { lmServer, olServer, backends };
}

describe('model discovery across backends', () => {
  it('LM Studio only: picks its tool-capable model, never the embedding one', async () => {
    const { backends } = await setup('up', 'down');
    const probes = await backends.catalog.probe();
    expect(probes.map((p) => [p.backend, p.ok])).toEqual([
      ['lm_studio', true],
      ['ollama', false],
    ]);
    expect(resolveModel(probes, {}).model.id).toBe('qwen/qwen3-coder-30b');
  });

  it('Ollama only: skips the embedding and the tool-less model', async () => {
    const { backends } = await setup('down', 'up');
    const choice = resolveModel(await backends.catalog.probe(), {});
    expect(choice.model).toMatchObject({ id: 'qwen2.5-coder:7b', backend: 'ollama' });
  });

  it('both: the smallest loaded tool-capable model wins, wherever it is', async () => {
    const { backends } = await setup('up', 'up');
    const choice = resolveModel(await backends.catalog.probe(), {});
    expect(choice.model.id).toBe('qwen2.5-coder:7b');
    expect(choice.reason).toContain('tool-capable, loaded, 7.6B parameters');
  });

  it('neither: a clear error naming both servers, and no chat request', async () => {
    const { backends } = await setup('down', 'down');
    const probes = await backends.catalog.probe();
    expect(() => resolveModel(probes, {})).toThrow(
      /No model server answered[\s\S]*lm_studio http[\s\S]*ollama http/,
    );
  });
});

describe('routing across backends', () => {
  it('finishes the turn on Ollama when LM Studio dies mid-run, with the model Ollama has', async () => {
    const { lmServer, olServer, backends } = await setup('up', 'up');
    lmServer!.push({ reply: { content: 'step one on LM Studio' } }, { hang: true });
    olServer!.push({ reply: { content: 'step two on Ollama' } });
    const probes = await backends.catalog.probe();
    const choice = resolveModel(probes, { configuredModel: 'qwen/qwen3-coder-30b' });
    const chat = await backends.chatClientFor(choice, { configuredModel: 'qwen/qwen3-coder-30b' });

    const first = await chat.complete(ask(choice.model.id));
    expect(first.backend).toBe(`lm_studio ${lmServer!.url}`);
    const second = chat.complete(ask(choice.model.id));
    for (let i = 0; i < 200 && lmServer!.chatRequests().length < 2; i += 1)
      await new Promise((r) => setTimeout(r, 5));
    await lmServer!.stop();
    const turn = await second;
    expect(turn.content).toBe('step two on Ollama');
    expect(turn.backend).toBe(`ollama ${olServer!.url} (model qwen2.5-coder:7b)`);
    expect(chat.backend).toBe('ollama');
    expect(olServer!.chatRequests()[0]?.body).toMatchObject({ model: 'qwen2.5-coder:7b' });
    expect(backends.health.isDown('lm_studio')).toBe(true);
    // The failure dropped the cached catalog: the next probe asks again and sees LM Studio down.
    const again = await backends.catalog.probe();
    expect(again.find((p) => p.backend === 'lm_studio')?.ok).toBe(false);
  });

  it('does not fall back when the model lacks tools: one request to Ollama, none to LM Studio', async () => {
    const { lmServer, olServer, backends } = await setup('up', 'up');
    const probes = await backends.catalog.probe();
    const options = { flagModel: 'deepseek-r1:1.5b' };
    const choice = resolveModel(probes, options);
    const chat = await backends.chatClientFor(choice, options);
    const error = await chat.complete(ask(choice.model.id)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('model_lacks_tools');
    expect((error as FabricError).message).toContain('"deepseek-r1:1.5b"');
    expect(olServer!.chatRequests()).toHaveLength(1);
    expect(lmServer!.chatRequests()).toHaveLength(0);
  });

  it('sends Ollama the num_ctx the catalog allows for the model', async () => {
    const { olServer, backends } = await setup('down', 'up');
    olServer!.push({ reply: { content: 'ok' } });
    const choice = resolveModel(await backends.catalog.probe(), {});
    const chat = await backends.chatClientFor(choice, {});
    await chat.complete(ask(choice.model.id, 'y'.repeat(90_000)));
    // ~30k tokens would want 65536; the model's trained length, 32768, bounds it.
    expect(olServer!.chatRequests()[0]?.body).toMatchObject({ options: { num_ctx: 32768 } });
  });
});

describe('CompositeCatalog', () => {
  function counting(ok: boolean) {
    let calls = 0;
    const catalog: ModelCatalog = {
      probe: async () => {
        calls += 1;
        const probe: BackendProbe = {
          backend: 'ollama',
          baseUrl: 'x',
          ok,
          latencyMs: 1,
          error: ok ? undefined : 'down',
          models: [],
        };
        return [probe];
      },
    };
    return { catalog, calls: () => calls };
  }

  it('caches a healthy answer for a while, so a long-lived process sees models loaded later, and until invalidate()', async () => {
    let now = 0;
    const inner = counting(true);
    const composite = new CompositeCatalog([inner.catalog], { maxAgeMs: 30_000, now: () => now });
    await composite.probe();
    now = 29_000;
    await composite.probe();
    expect(inner.calls()).toBe(1);
    composite.invalidate();
    await composite.probe();
    expect(inner.calls()).toBe(2);
    now = 60_000;
    await composite.probe();
    expect(inner.calls()).toBe(3);
  });

  it('asks again after a while when some backend was down', async () => {
    let now = 0;
    const inner = counting(false);
    const composite = new CompositeCatalog([inner.catalog], { retryFailedAfterMs: 30_000, now: () => now });
    await composite.probe();
    now = 10_000;
    await composite.probe();
    expect(inner.calls()).toBe(1);
    now = 31_000;
    await composite.probe();
    expect(inner.calls()).toBe(2);
  });
});

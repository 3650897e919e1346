import { describe, expect, it } from 'vitest';
import type { BackendProbe, ModelCatalog } from '../../../src/application/ports.ts';
import { CompositeCatalog } from '../../../src/infrastructure/llm/composite-catalog.ts';

/** A catalog that answers loading until told otherwise, counting the questions. */
function llamaServer() {
  const state = { loading: true, asked: 0 };
  const catalog: ModelCatalog = {
    probe: async () => {
      state.asked += 1;
      const probe: BackendProbe = {
        backend: 'llama_cpp',
        baseUrl: 'http://llama.test:8080',
        ok: !state.loading,
        latencyMs: 1,
        error: state.loading ? 'loading its model' : undefined,
        ...(state.loading ? { loading: true } : {}),
        models: [],
      };
      return [probe];
    },
  };
  return { state, catalog };
}

describe('CompositeCatalog and a server loading its model', () => {
  it('keeps the quick answer for callers that do not wait, and asks again for one that does', async () => {
    const { state, catalog } = llamaServer();
    const composite = new CompositeCatalog([catalog]);
    expect((await composite.probe())[0]?.loading).toBe(true);
    await composite.probe(); // a second health check: the cached answer
    expect(state.asked).toBe(1);
    state.loading = false;
    // A run (it listens for progress) does not take "loading" from the cache.
    expect((await composite.probe(undefined, () => {}))[0]?.ok).toBe(true);
    expect(state.asked).toBe(2);
    // Once the server is ready, the answer is cached for everyone.
    await composite.probe(undefined, () => {});
    expect(state.asked).toBe(2);
  });
});

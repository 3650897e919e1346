import { describe, expect, it } from 'vitest';
import { FabricError } from '../../../src/domain/errors.ts';
import { HealthBook } from '../../../src/infrastructure/llm/health-book.ts';
import { LmStudioBackend } from '../../../src/infrastructure/llm/lmstudio/lmstudio-backend.ts';
import type { FakeLlmServer, FakeModel } from '../../support/fake-llm-server.ts';
import { RETRY, ask, closedPortUrl, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

const CODER = { id: 'qwen/qwen3-coder-30b', toolUse: true, paramSize: '30B' };

function backend(urls: string[], health = new HealthBook(), refreshAfterMs?: number): LmStudioBackend {
  return new LmStudioBackend({
    urls,
    probeTimeoutMs: 800,
    chat: { retry: RETRY, requestTimeoutMs: 5000 },
    health,
    ...(refreshAfterMs === undefined ? {} : { refreshAfterMs }),
  });
}

const turn = (content: string, delayMs = 0) => ({ reply: { content }, delayMs });

describe('LM Studio with several servers', () => {
  it('probes three servers with one down, and sends each request to a healthy server that has the model', async () => {
    const a = await fake({ flavor: 'lm_studio', models: [CODER], script: [turn('from a', 40)] });
    const b = await fake({ flavor: 'lm_studio', models: [CODER], script: [turn('from b', 40)] });
    const other = await fake({ flavor: 'lm_studio', models: [{ id: 'google/gemma-3-4b', toolUse: true }] });
    const down = await closedPortUrl();
    const lm = backend([down, a.url, other.url, b.url]);
    const probes = await lm.probe();
    expect(probes.map((p) => p.ok)).toEqual([false, true, true, true]);

    const chat = lm.chatClient();
    // Two concurrent runs spread over the two servers that have the model.
    const turns = await Promise.all([chat.complete(ask(CODER.id)), chat.complete(ask(CODER.id))]);
    expect(turns.map((t) => t.content).sort()).toEqual(['from a', 'from b']);
    expect(a.chatRequests()).toHaveLength(1);
    expect(b.chatRequests()).toHaveLength(1);
    expect(other.chatRequests()).toHaveLength(0);
  });

  it('takes turns between healthy servers for runs one after another', async () => {
    const servers: FakeLlmServer[] = [];
    for (const name of ['a', 'b']) {
      servers.push(await fake({ flavor: 'lm_studio', models: [CODER], script: [turn(name), turn(name)] }));
    }
    const lm = backend(servers.map((s) => s.url));
    await lm.probe();
    const answers: string[] = [];
    for (let i = 0; i < 4; i += 1) answers.push((await lm.chatClient().complete(ask(CODER.id))).content);
    expect(answers.sort()).toEqual(['a', 'a', 'b', 'b']);
  });

  it('moves a request to the next server when one dies, and marks the dead one down', async () => {
    const health = new HealthBook();
    const a = await fake({ flavor: 'lm_studio', models: [CODER], script: [{ hang: true }] });
    const b = await fake({ flavor: 'lm_studio', models: [CODER], script: [turn('b answered')] });
    const lm = backend([a.url, b.url], health);
    await lm.probe();
    const pending = lm.chatClient().complete(ask(CODER.id));
    // a receives the request, then dies mid-generation.
    await waitFor(() => a.chatRequests().length === 1);
    await a.stop();
    const answered = await pending;
    expect(answered.content).toBe('b answered');
    expect(answered.backend).toBe(`lm_studio ${b.url}`);
    expect(health.isDown(`lm_studio ${a.url}`)).toBe(true);
  });

  it('throws backend_unavailable when no server has the model', async () => {
    const a = await fake({ flavor: 'lm_studio', models: [CODER] });
    const lm = backend([a.url]);
    await lm.probe();
    const error = await lm
      .chatClient()
      .complete(ask('missing/model'))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('backend_unavailable');
    expect((error as FabricError).message).toContain('no LM Studio server has "missing/model"');
    expect(a.chatRequests()).toHaveLength(0);
  });
});

describe('LM Studio dispatch by loaded model (prompt-prix ADR-006)', () => {
  const answers = (n: number, text: string) => Array.from({ length: n }, () => turn(text));

  it('sends every request for a model to the server that has it loaded, not one that only lists it', async () => {
    const listing = await fake({
      flavor: 'lm_studio',
      models: [{ ...CODER, loaded: false }],
      script: answers(4, 'listing'),
    });
    const loaded = await fake({ flavor: 'lm_studio', models: [CODER], script: answers(4, 'loaded') });
    const lm = backend([listing.url, loaded.url]);
    await lm.probe();
    const turns = await Promise.all([1, 2, 3, 4].map(() => lm.chatClient().complete(ask(CODER.id))));
    expect(turns.map((t) => t.content)).toEqual(['loaded', 'loaded', 'loaded', 'loaded']);
    expect(listing.chatRequests()).toHaveLength(0);
  });

  it('sends a model loaded nowhere to a server that lists it', async () => {
    const a = await fake({ flavor: 'lm_studio', models: [{ id: 'google/gemma-3-4b', toolUse: true }] });
    const b = await fake({
      flavor: 'lm_studio',
      models: [{ ...CODER, loaded: false }],
      script: [turn('b loads it')],
    });
    const lm = backend([a.url, b.url]);
    await lm.probe();
    expect((await lm.chatClient().complete(ask(CODER.id))).content).toBe('b loads it');
    expect(a.chatRequests()).toHaveLength(0);
  });

  it('re-reads which server has the model loaded as requests go on', async () => {
    const modelsA: FakeModel[] = [{ ...CODER }];
    const modelsB: FakeModel[] = [{ ...CODER, loaded: false }];
    const a = await fake({ flavor: 'lm_studio', models: modelsA, script: answers(3, 'a') });
    const b = await fake({ flavor: 'lm_studio', models: modelsB, script: answers(3, 'b') });
    const lm = backend([a.url, b.url], new HealthBook(), 0);
    await lm.probe();
    const probeGets = b.requests.filter((r) => r.method === 'GET').length;
    expect((await lm.chatClient().complete(ask(CODER.id))).content).toBe('a');
    // The user unloads it on a and loads it on b; the adapter notices on its next re-read.
    modelsA[0]!.loaded = false;
    modelsB[0]!.loaded = true;
    await lm.chatClient().complete(ask(CODER.id));
    // Every request started a re-read in the background; wait for two more whole probes of b.
    await waitFor(() => b.requests.filter((r) => r.method === 'GET').length >= probeGets * 3);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect((await lm.chatClient().complete(ask(CODER.id))).content).toBe('b');
  });
});

async function waitFor(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!condition()) throw new Error('condition not met');
}

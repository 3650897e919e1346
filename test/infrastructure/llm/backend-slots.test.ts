import { describe, expect, it } from 'vitest';
import type { ChatClient } from '../../../src/application/ports.ts';
import { LlmBackends } from '../../../src/infrastructure/llm/llm-backends.ts';
import { startFakeLlamaServer } from '../../support/fake-llm-compat.ts';
import { llamaTimings, prefillClock } from '../../support/fake-llm-prefill.ts';
import type { FakeLlmServer } from '../../support/fake-llm-server.ts';
import { closedPortUrl, fake, llmConfig, stopFakesAfterEach } from './llm-test-kit.ts';
import { readUntilFinish, reportingPrefill, runRequest, servedRuns, toolRuns } from './slot-test-kit.ts';

stopFakesAfterEach();

const MODEL = 'qwen2.5-coder:7b';

/** The backend's own chat client (no failover), as LlmBackends builds it from the config. */
async function clientOf(backends: LlmBackends, kind: string): Promise<ChatClient> {
  const probe = (await backends.catalog.probe()).find((p) => p.backend === kind && p.ok);
  const client = probe && (await backends.clientFor(probe.models[0]!));
  if (client === undefined) throw new Error(`no ${kind} client`);
  return client;
}

/** Run a's request, b's while a's tool runs, then a's last: the order the server saw them in. */
async function twoRuns(chat: ChatClient, server: FakeLlmServer, model: string): Promise<string[]> {
  await chat.complete(runRequest(model, 'a', 'read', 2000));
  const b = chat.complete(runRequest(model, 'b', 'read', 8000));
  await toolRuns();
  await chat.complete(runRequest(model, 'a', 'finish'));
  await b;
  return servedRuns(server);
}

async function llamaServer(): Promise<FakeLlmServer> {
  // One slot (/props total_slots), a prefill it reports in `timings`: 10 tokens a second.
  const server = await startFakeLlamaServer({
    model: { id: MODEL, toolUse: true },
    slots: 1,
    respond: (request) => reportingPrefill(readUntilFinish(request), 10),
  });
  return server;
}

/**
 * llama-server with one slot reporting in `timings` what a prefill of 20 tokens a second would cost
 * and what its cache served (cache_n); `hostCache`: started with `--cache-ram`, it keeps the prompts
 * a slot evicts and restores them.
 */
async function cachingLlamaServer(hostCache: boolean): Promise<FakeLlmServer> {
  const clock = prefillClock(20, hostCache);
  return startFakeLlamaServer({
    model: { id: MODEL, toolUse: true },
    slots: 1,
    respond: (request) => {
      const turn = readUntilFinish(request);
      const timings = llamaTimings(clock.take({ messages: request.messages }));
      return 'reply' in turn ? { reply: { ...turn.reply, timings } } : turn;
    },
  });
}

/** Run d's held slot goes to run c, which started first; d comes back with its prompt grown. */
async function handOver(chat: ChatClient): Promise<void> {
  await chat.complete(runRequest(MODEL, 'c', 'finish'));
  const d = runRequest(MODEL, 'd', 'read', 2000);
  await chat.complete(d);
  await chat.complete(runRequest(MODEL, 'c', 'finish'));
  await chat.complete({ ...d, messages: [...d.messages, { role: 'user', content: 'finish' }] });
}

async function ollamaServer(): Promise<FakeLlmServer> {
  // Ollama serves one request at a time without OLLAMA_NUM_PARALLEL, and does not say so.
  return fake({
    flavor: 'ollama',
    models: [{ id: MODEL, toolUse: true }],
    prefillTokensPerSecond: 2000,
    respond: readUntilFinish,
  });
}

describe('slots of the servers of llm.backends and of Ollama', () => {
  it("llama-server: holds its one slot (/props total_slots) for a run while the run's tool runs", async () => {
    const server = await llamaServer();
    const backends = new LlmBackends(
      llmConfig({
        lm_studio_urls: [],
        ollama_url: await closedPortUrl(),
        backends: [{ kind: 'llama_cpp', url: server.url, name: 'llama' }],
      }),
    );
    try {
      expect(await twoRuns(await clientOf(backends, 'llama_cpp'), server, MODEL)).toEqual(['a', 'a', 'b']);
    } finally {
      await server.stop();
    }
  });

  it("llama-server with --cache-ram: once its cache_n shows a handed-over run's prompt restored, the slot goes to a waiter at once", async () => {
    const orders: string[][] = [];
    for (const hostCache of [true, false]) {
      const server = await cachingLlamaServer(hostCache);
      const backends = new LlmBackends(
        llmConfig({
          lm_studio_urls: [],
          ollama_url: await closedPortUrl(),
          backends: [{ kind: 'llama_cpp', url: server.url, name: 'llama' }],
        }),
      );
      try {
        const chat = await clientOf(backends, 'llama_cpp');
        await handOver(chat);
        expect(servedRuns(server)).toEqual(['c', 'd', 'c', 'd']);
        orders.push((await twoRuns(chat, server, MODEL)).slice(4));
      } finally {
        await server.stop();
      }
    }
    // Restored: a hand-over costs the held run nothing, so b need not wait for a's tool.
    // Lost (no host cache): a's slot is still held while its tool runs, as before.
    expect(orders).toEqual([
      ['a', 'b', 'a'],
      ['a', 'a', 'b'],
    ]);
  });

  it('Ollama with llm.ollama_parallel: 1 holds its slot for a run; without it, every request goes at once', async () => {
    const held = await ollamaServer();
    const scheduled = new LlmBackends(
      llmConfig({ lm_studio_urls: [], ollama_url: held.url, ollama_parallel: 1 }),
    );
    expect(await twoRuns(await clientOf(scheduled, 'ollama'), held, MODEL)).toEqual(['a', 'a', 'b']);

    const free = await ollamaServer();
    const unscheduled = new LlmBackends(llmConfig({ lm_studio_urls: [], ollama_url: free.url }));
    expect(await twoRuns(await clientOf(unscheduled, 'ollama'), free, MODEL)).toEqual(['a', 'b', 'a']);
  });
});

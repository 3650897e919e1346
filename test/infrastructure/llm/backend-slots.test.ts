import { describe, expect, it } from 'vitest';
import type { ChatClient } from '../../../src/application/ports.ts';
import { LlmBackends } from '../../../src/infrastructure/llm/llm-backends.ts';
import { startFakeLlamaServer } from '../../support/fake-llm-compat.ts';
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

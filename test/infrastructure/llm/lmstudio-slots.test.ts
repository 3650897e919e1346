import { describe, expect, it } from 'vitest';
import { HealthBook } from '../../../src/infrastructure/llm/health-book.ts';
import { LmStudioBackend } from '../../../src/infrastructure/llm/lmstudio/lmstudio-backend.ts';
import type { FakeLlmServer } from '../../support/fake-llm-server.ts';
import { RETRY, fake, stopFakesAfterEach } from './llm-test-kit.ts';
import { readUntilFinish, reportingPrefill, runRequest, servedRuns, toolRuns } from './slot-test-kit.ts';

stopFakesAfterEach();

// One slot: LM Studio's `config.parallel: 1`, as older builds and Ollama without OLLAMA_NUM_PARALLEL.
const MODEL = { id: 'qwen/qwen3-coder-30b', toolUse: true, loaded: true, parallel: 1 };

/** A GPU server with one slot that prefills 2,000 tokens a second; "finish" in a task ends the run. */
async function oneSlotServer(): Promise<FakeLlmServer> {
  return fake({
    flavor: 'lm_studio',
    lmStudioV1Api: true,
    models: [MODEL],
    prefillTokensPerSecond: 2000,
    respond: readUntilFinish,
  });
}

/**
 * A one-slot server that answers at once but reports, as llama-server does in `timings`, a prefill
 * of `tokensPerSecond` (prompt_n tokens in prompt_ms): its own figure, not this machine's clock.
 */
async function reportingServer(tokensPerSecond: number): Promise<FakeLlmServer> {
  return fake({
    flavor: 'lm_studio',
    lmStudioV1Api: true,
    models: [MODEL],
    respond: (request) => reportingPrefill(readUntilFinish(request), tokensPerSecond),
  });
}

async function chatOn(server: FakeLlmServer) {
  const lm = new LmStudioBackend({
    urls: [server.url],
    probeTimeoutMs: 800,
    chat: { retry: RETRY, requestTimeoutMs: 120_000 },
    health: new HealthBook(),
  });
  await lm.probe();
  return lm.chatClient();
}

const of = (run: string, task: string, padding = 0, signal?: AbortSignal) =>
  runRequest(MODEL.id, run, task, padding, signal);
const served = servedRuns;

describe('one slot shared by several runs', () => {
  it('holds the slot for a run while its tool runs, and hands it over when the tool runs long', async () => {
    const server = await oneSlotServer();
    const chat = await chatOn(server);
    await chat.complete(of('a', 'read', 2000));
    // b waits while a's tool runs; b's cold prefill (~2,000 tokens, about a second) is what the hold may cost.
    const b = chat.complete(of('b', 'read', 8000));
    // a's tool was quick: its next request takes the slot that still holds its prompt.
    await chat.complete(of('a', 'read again'));
    // a's next tool never ends: the slot goes to b once holding it costs more than b's cold prefill.
    await b;
    expect(served(server)).toEqual(['a', 'a', 'b']);
  });

  it('never holds a slot for a run against one that started before it', async () => {
    const server = await oneSlotServer();
    const chat = await chatOn(server);
    await chat.complete(of('a', 'finish', 2000));
    // b (started second) holds the slot while its tool runs.
    await chat.complete(of('b', 'read'));
    // c, started third, has a long prompt: b may hold the slot against it for about a minute.
    const stop = new AbortController();
    const c = chat.complete(of('c', 'read', 400_000, stop.signal)).catch(() => 'aborted');
    // a started first: it gets the slot at once, ahead of c, though b's hold has long to run.
    const again = await chat.complete(of('a', 'finish now'));
    expect(again.content).toBe('done');
    expect(served(server).slice(0, 3)).toEqual(['a', 'b', 'a']);
    stop.abort();
    await c;
  });

  it("sizes a hold from the server's reported prefill speed, not from the time its answer took", async () => {
    // The server answers at once, but says it prefills 10 tokens a second: a cold prefill of a's
    // prompt (~600 tokens) costs about a minute, so a's slot is held for a while its tool runs.
    const server = await reportingServer(10);
    const chat = await chatOn(server);
    await chat.complete(of('a', 'read', 2000));
    const b = chat.complete(of('b', 'read'));
    // a's tool takes a moment; timed from the answer (a few ms) the hold would be over by now.
    await toolRuns();
    await chat.complete(of('a', 'finish'));
    await b;
    expect(served(server)).toEqual(['a', 'a', 'b']);
  });

  it("holds a slot as long as the held run's own prompt would take to prefill again, however short the waiter's", async () => {
    // 1,000 tokens a second: b's short prompt (~90 tokens) prefills in about 90 ms, a's (~25k
    // tokens) in about 25 s. Handing the slot to b costs a all of it again, so a keeps it.
    const server = await reportingServer(1000);
    const chat = await chatOn(server);
    await chat.complete(of('a', 'read', 100_000));
    const b = chat.complete(of('b', 'read'));
    await toolRuns();
    await chat.complete(of('a', 'finish'));
    await b;
    expect(served(server)).toEqual(['a', 'a', 'b']);
  });
});

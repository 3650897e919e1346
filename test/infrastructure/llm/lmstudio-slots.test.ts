import { describe, expect, it } from 'vitest';
import type { ChatRequest } from '../../../src/application/ports.ts';
import { HealthBook } from '../../../src/infrastructure/llm/health-book.ts';
import { LmStudioBackend } from '../../../src/infrastructure/llm/lmstudio/lmstudio-backend.ts';
import type { FakeLlmServer, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { RETRY, ask, fake, stopFakesAfterEach } from './llm-test-kit.ts';

stopFakesAfterEach();

// One slot: LM Studio's `config.parallel: 1`, as older builds and Ollama without OLLAMA_NUM_PARALLEL.
const MODEL = { id: 'qwen/qwen3-coder-30b', toolUse: true, loaded: true, parallel: 1 };
const READ: ScriptedTurn = { reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'a.rs' } }] } };
const DONE: ScriptedTurn = { reply: { content: 'done' } };

/** A GPU server with one slot that prefills 2,000 tokens a second; "finish" in a task ends the run. */
async function oneSlotServer(): Promise<FakeLlmServer> {
  return fake({
    flavor: 'lm_studio',
    lmStudioV1Api: true,
    models: [MODEL],
    prefillTokensPerSecond: 2000,
    respond: ({ messages }) => (messages.some((m) => m.content.includes('finish')) ? DONE : READ),
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

/** A request of run `run`; `padding` characters make its prompt long (a cold prefill of it, slow). */
function of(run: string, task: string, padding = 0, signal?: AbortSignal): ChatRequest {
  return { ...ask(MODEL.id, `${run}: ${task} ${'x'.repeat(padding)}`, signal), affinity: run };
}

/** Which run sent each request the server received, in order. */
function served(server: FakeLlmServer): string[] {
  return server.chatRequests().map((r) => {
    const messages = (r.body as { messages: { content: string }[] }).messages;
    return messages[0]!.content.split(':')[0]!;
  });
}

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
});

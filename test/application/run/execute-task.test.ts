import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { type ExecuteTaskInput, executeTask } from '../../../src/application/run/execute-task.ts';
import type { ChatClient, ChatRequest, ChatTurn } from '../../../src/application/ports.ts';
import { ReplayChatClient } from '../../../src/application/replay/replay-chat-client.ts';
import { summarizeRun } from '../../../src/application/runs/run-summary.ts';
import { SpecialistSchema } from '../../../src/config/schema.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { MemoryRunLogStore } from '../../../src/infrastructure/runlog/memory-run-log-store.ts';
import { LocalProcessLiveness } from '../../../src/infrastructure/runlog/process-liveness.ts';
import { systemClock } from '../../../src/infrastructure/clock.ts';
import { buildPack } from '../../../packs/example/pack.ts';

const FINISH: RunEvent[] = [
  {
    v: 1,
    kind: 'llm_response',
    ts: '2030-01-01T00:00:00.000Z',
    run_id: 'recorded',
    seq: 1,
    step: 1,
    content: '',
    tool_calls: [{ id: 'c1', name: 'finish_task', arguments: '{"summary":"Done.","answer":"1.86 mi"}' }],
    finish_reason: 'tool_calls',
    usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
    latency_ms: 5,
    attempts: 1,
    backend: 'lm_studio http://127.0.0.1:1234',
  },
];

/** A model that has been asked and never answers, until the run is cancelled. */
class SilentModel implements ChatClient {
  readonly backend = 'lm_studio' as const;
  #wasAsked: () => void = () => {};
  readonly asked = new Promise<void>((resolve) => {
    this.#wasAsked = resolve;
  });

  complete(request: ChatRequest): Promise<ChatTurn> {
    this.#wasAsked();
    return new Promise((_resolve, reject) => {
      request.signal.addEventListener('abort', () => reject(request.signal.reason), { once: true });
    });
  }
}

async function input(
  store: MemoryRunLogStore,
  chat: ChatClient,
  extra: Partial<ExecuteTaskInput>,
): Promise<ExecuteTaskInput> {
  const pack = await buildPack({
    specialist: 'units',
    config: v.parse(SpecialistSchema, { builder: 'packs/example/pack.ts#buildPack' }),
    workspace: undefined,
    settings: { searxngUrl: undefined },
  });
  return {
    specialist: 'units',
    task: 'Convert 3 km to miles',
    pack,
    chat,
    model: { id: 'qwen3:8b', backend: 'lm_studio' },
    runLogStore: store,
    limits: { maxSteps: 5, budgetMs: 60_000, recoverTextToolCalls: true },
    workspace: null,
    configDigest: 'abc',
    fabricVersion: '0.1.0',
    clock: systemClock,
    signal: new AbortController().signal,
    ...extra,
  };
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  return child.pid ?? 0;
}

describe('executeTask and the run owner', () => {
  it('records the owner it is given in run_start, so readers can check its process', async () => {
    const store = new MemoryRunLogStore();
    const owner = { pid: 1234, host: 'build-box' };
    await executeTask(await input(store, new ReplayChatClient(FINISH), { runId: 'owned', owner }));
    const [first] = (await store.read('owned')).events;
    expect(first).toMatchObject({ kind: 'run_start', pid: 1234, host: 'build-box' });
  });

  it('leaves pid and host out of run_start when no owner is given', async () => {
    const store = new MemoryRunLogStore();
    await executeTask(await input(store, new ReplayChatClient(FINISH), { runId: 'unowned' }));
    const [first] = (await store.read('unowned')).events;
    expect(first?.kind).toBe('run_start');
    expect(first).not.toHaveProperty('pid');
    expect(first).not.toHaveProperty('host');
  });

  it('is running while its owner lives, and interrupted as read by anyone once the owner is gone', async () => {
    const check = { liveness: new LocalProcessLiveness(), now: new Date() };
    for (const [pid, expected] of [
      [process.pid, 'running'],
      [await deadPid(), 'interrupted'],
    ] as const) {
      const store = new MemoryRunLogStore();
      const chat = new SilentModel();
      const controller = new AbortController();
      const runId = `in-progress-${pid}`;
      const run = executeTask(
        await input(store, chat, {
          runId,
          owner: { pid, host: hostname() },
          signal: controller.signal,
        }),
      );
      await chat.asked;
      const { events } = await store.read(runId);
      expect(summarizeRun(runId, events, check).status).toBe(expected);
      controller.abort(new Error('test over'));
      expect((await run).status).toBe('cancelled');
    }
  });
});

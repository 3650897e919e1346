import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import type { RunLogContents } from '../../../src/application/ports.ts';
import { ReplayChatClient } from '../../../src/application/replay/replay-chat-client.ts';
import { type ReplayDeps, RunReplay } from '../../../src/application/replay/replay-run.ts';
import { executeTask } from '../../../src/application/run/execute-task.ts';
import { SpecialistSchema } from '../../../src/config/schema.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { systemClock } from '../../../src/infrastructure/clock.ts';
import { MemoryRunLogStore } from '../../../src/infrastructure/runlog/memory-run-log-store.ts';
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

const unitsPack = () =>
  buildPack({
    specialist: 'units',
    config: v.parse(SpecialistSchema, { builder: 'packs/example/pack.ts#buildPack' }),
    workspace: undefined,
    settings: { searxngUrl: undefined },
  });

/** A run of the example pack that finished at its first turn, as its runlog holds it. */
async function recordedRun(): Promise<RunLogContents> {
  const store = new MemoryRunLogStore();
  const result = await executeTask({
    specialist: 'units',
    task: 'Convert 3 km to miles',
    pack: await unitsPack(),
    chat: new ReplayChatClient(FINISH),
    model: { id: 'qwen3:8b', backend: 'lm_studio' },
    runLogStore: store,
    limits: { maxSteps: 5, budgetMs: 60_000, recoverTextToolCalls: true },
    workspace: null,
    configDigest: 'abc',
    fabricVersion: '0.1.0',
    clock: systemClock,
    signal: new AbortController().signal,
    runId: 'recorded',
  });
  return store.read(result.run_id);
}

/** The use case over fakes: a copy that only says where it is, and which packs were built. */
function replay() {
  const copies: { source: string; disposed: boolean }[] = [];
  const packs: [string, string | undefined][] = [];
  const deps: ReplayDeps = {
    copyWorkspace: async (source) => {
      const copy = { source, disposed: false };
      copies.push(copy);
      return {
        path: `/tmp/replay-copy/${source.split('/').at(-1)}`,
        dispose: async () => {
          copy.disposed = true;
        },
      };
    },
    buildPack: async (specialist, workspace) => {
      packs.push([specialist, workspace]);
      return unitsPack();
    },
    runLogStore: () => new MemoryRunLogStore(),
    clock: systemClock,
    settings: { recoverTextToolCalls: true, configDigest: 'def', fabricVersion: '0.2.0' },
  };
  return { use: new RunReplay(deps), copies, packs };
}

const options = { observers: [], signal: new AbortController().signal };

describe('RunReplay', () => {
  it('re-runs the recorded turns in a copy of the workspace, compares, and removes the copy', async () => {
    const run = await recordedRun();
    const t = replay();
    const report = await t.use.execute(run, { ...options, source: '/work/ws', keep: false });
    expect(report.cancelled).toBe(false);
    expect(report.comparison.identical).toBe(true);
    expect(report.replay).toMatchObject({ run_id: 'recorded.replay', status: 'succeeded', turns_used: 1 });
    expect(report.workspace).toEqual({ source: '/work/ws', copy: '/tmp/replay-copy/ws', kept: false });
    expect(t.packs).toEqual([['units', '/tmp/replay-copy/ws']]);
    expect(t.copies).toEqual([{ source: '/work/ws', disposed: true }]);
  });

  it('keeps the copy when asked, and makes none for a run without a workspace', async () => {
    const run = await recordedRun();
    const kept = replay();
    expect((await kept.use.execute(run, { ...options, source: '/work/ws', keep: true })).workspace.kept).toBe(
      true,
    );
    expect(kept.copies[0]?.disposed).toBe(false);

    const none = replay();
    const report = await none.use.execute(run, { ...options, source: null, keep: true });
    expect(report.workspace).toEqual({ source: null, copy: null, kept: false });
    expect(none.packs).toEqual([['units', undefined]]);
    expect(none.copies).toEqual([]);
  });

  it('refuses a run without run_start, and still removes the copy', async () => {
    const run = await recordedRun();
    const t = replay();
    const headless = { ...run, events: run.events.filter((event) => event.kind !== 'run_start') };
    await expect(t.use.execute(headless, { ...options, source: '/work/ws', keep: false })).rejects.toThrow(
      'has no run_start line',
    );
    expect(t.copies[0]?.disposed).toBe(true);
  });
});

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { isBatterySink } from '../../../src/application/battery/battery-ports.ts';
import type { CellResult } from '../../../src/application/battery/battery-types.ts';
import type { ControlStore } from '../../../src/application/control/control-ports.ts';
import { type ModelCard, isModelCardRows } from '../../../src/application/models/model-card.ts';
import type { ProcessLiveness } from '../../../src/application/runs/liveness-ports.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';
import { ControlMirror } from '../../../src/infrastructure/control/control-mirror.ts';
import { buildExports, exportAll } from '../../../src/infrastructure/control/exports.ts';
import { SCHEMA_VERSION } from '../../../src/infrastructure/control/migrations.ts';
import { ModelCallTracker } from '../../../src/infrastructure/control/model-calls.ts';
import { SqlControlStore } from '../../../src/infrastructure/control/sql-control-store.ts';
import { syncRunlogs } from '../../../src/infrastructure/control/sync.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import { lacksToolsRun, succeededRun, tempRunsDir, unavailableRun, writeRunlog } from './fixtures.ts';

/** What an adapter's test file provides to the shared suite. */
export interface ControlStoreHarness {
  /** A store on the adapter's test database; the suite closes it. */
  open(): Promise<ControlStore>;
  /** A store whose database cannot be reached at all. */
  openUnreachable(): ControlStore;
  /** A working store, and a way to make its database go away while it is in use. */
  openInterruptible(): Promise<{ store: ControlStore; interrupt(): Promise<void> }>;
}

async function withStore<T>(
  harness: ControlStoreHarness,
  work: (store: ControlStore) => Promise<T>,
): Promise<T> {
  const store = await harness.open();
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

let counter = 0;
function runId(label: string): string {
  counter += 1;
  return `20300101T000000Z-${label}-${counter}-${Math.random().toString(36).slice(2, 8)}`;
}

/** The lines the file store reads back: the reference the database rows must match. */
async function readBack(runsDir: string, id: string): Promise<readonly RunEvent[]> {
  return (await new FileRunLogStore(runsDir).read(id)).events;
}

async function expectMirrored(store: ControlStore, runsDir: string, id: string): Promise<void> {
  expect(await store.runEvents(id)).toEqual(await readBack(runsDir, id));
}

/**
 * The contract every control store passes: the same SQL, so the same rows and the same
 * exports, on Postgres and on the embedded PGlite.
 */
export function controlStoreContract(name: string, harness: () => ControlStoreHarness): void {
  describe(`${name} control store contract`, () => {
    it('applies the migrations once: migrating again changes nothing', async () => {
      await withStore(harness(), async (store) => {
        await store.migrate();
        const runsDir = await tempRunsDir();
        const id = runId('migrate');
        const events = await writeRunlog(runsDir, id, '2029-01-01T10:00:00Z', succeededRun());
        await store.write({ events, modelCalls: [] });
        const before = await store.getRun(id);
        const again = await store.migrate();
        expect(again).toEqual({ applied: [], version: SCHEMA_VERSION });
        expect(await store.getRun(id)).toEqual(before);
        await expectMirrored(store, runsDir, id);
      });
    });

    it('mirrors a run so that its rows match its runlog', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('mirror');
        const events = await writeRunlog(runsDir, id, '2029-01-02T10:00:00Z', succeededRun());
        const onDegraded = vi.fn();
        const mirror = new ControlMirror(store, { onDegraded });
        for (const event of events) mirror.onEvent(event);
        await mirror.close();

        expect(onDegraded).not.toHaveBeenCalled();
        expect(mirror.stats).toEqual({ written: 19, dropped: 0, degraded: false });
        await expectMirrored(store, runsDir, id);
        expect(await store.getRun(id)).toEqual({
          id,
          specialist: 'rust',
          task: 'make the compositor build',
          model: 'qwen2.5-coder-7b',
          backend: 'lm_studio http://127.0.0.1:1234',
          status: 'succeeded',
          started_at: '2029-01-02T10:00:00.000Z',
          ended_at: '2029-01-02T10:00:18.000Z',
          steps: 4,
          prompt_tokens: 1000,
          completion_tokens: 140,
          total_tokens: 1140,
          duration_ms: 18_000,
          payload: { summary: 'done', artifacts: [], next_steps: [], notes: '' },
          error: null,
        });
        const calls = await store.modelCalls(id);
        expect(calls.map((c) => [c.seq, c.step, c.tool, c.success, c.latency_ms, c.error_reason])).toEqual([
          [3, 1, 'lm_studio', true, 800, null],
          [7, 2, 'lm_studio', false, null, 'HTTP 503'],
          [8, 2, 'lm_studio', true, 1200, null],
          [13, 3, 'lm_studio', true, 1000, null],
          [17, 4, 'lm_studio', true, 600, null],
        ]);
        expect(calls[0]).toMatchObject({ model: 'qwen2.5-coder-7b', prompt_tokens: 100, total_tokens: 120 });
        expect(calls[0]?.ts).toBe(events[2]?.ts);
      });
    });

    it('keeps what each model call spent reasoning (SPEC §16)', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('reasoning');
        const thinking = succeededRun().map((input) =>
          input.kind === 'llm_response' && input.step === 1
            ? { ...input, reasoning: 'Twelve characters.'.slice(0, 12), reasoning_tokens: 3 }
            : input,
        );
        const events = await writeRunlog(runsDir, id, '2029-01-02T10:30:00Z', thinking);
        await store.write({ events, modelCalls: ModelCallTracker.fromEvents(events) });
        const calls = await store.modelCalls(id);
        expect(calls.map((c) => [c.step, c.reasoning_tokens, c.reasoning_chars])).toEqual([
          [1, 3, 12],
          [2, null, null],
          [2, null, null],
          [3, null, null],
          [4, null, null],
        ]);
      });
    });

    it('reads only the events after a given seq, for a stream that polls', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('after');
        const events = await writeRunlog(runsDir, id, '2029-01-02T11:00:00Z', succeededRun());
        await store.write({ events, modelCalls: [] });
        const all = await readBack(runsDir, id);
        expect(await store.runEvents(id, 5)).toEqual(all.slice(5));
        expect(await store.runEvents(id, all.length)).toEqual([]);
      });
    });

    it('writes queued events after the flush interval, without being asked', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('interval');
        const events = await writeRunlog(runsDir, id, '2029-01-02T12:00:00Z', succeededRun());
        const mirror = new ControlMirror(store, { flushIntervalMs: 20 });
        for (const event of events.slice(0, 4)) mirror.onEvent(event);
        await vi.waitFor(async () => expect(await store.runEvents(id)).toHaveLength(4), { timeout: 5_000 });
        await mirror.close();
      });
    });

    it('records failed model calls with their reason', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const down = runId('down');
        const lacks = runId('lacks');
        const mirror = new ControlMirror(store);
        for (const e of await writeRunlog(runsDir, down, '2029-01-03T10:00:00Z', unavailableRun()))
          mirror.onEvent(e);
        for (const e of await writeRunlog(runsDir, lacks, '2029-01-03T11:00:00Z', lacksToolsRun()))
          mirror.onEvent(e);
        await mirror.close();

        const downCalls = await store.modelCalls(down);
        expect(downCalls.map((c) => [c.tool, c.model, c.success, c.error_reason])).toEqual([
          ['ollama', 'llama3.1:8b', false, 'connection refused'],
          ['ollama', 'llama3.1:8b', false, 'connection refused'],
          ['ollama', 'llama3.1:8b', false, 'backend_unavailable'],
        ]);
        expect(await store.modelCalls(lacks)).toMatchObject([
          {
            seq: 3,
            step: 1,
            tool: 'ollama',
            model: 'gemma:2b',
            success: false,
            error_reason: 'model_lacks_tools',
          },
        ]);
        expect(await store.getRun(down)).toMatchObject({
          status: 'failed',
          error: { code: 'backend_unavailable', message: 'Ollama did not answer.' },
          payload: null,
        });
      });
    });

    it('stays quiet when the database is unreachable from the start, and sync fills in everything', async () => {
      const runsDir = await tempRunsDir();
      const id = runId('unreachable');
      const events = await writeRunlog(runsDir, id, '2029-01-04T10:00:00Z', succeededRun());
      const dead = harness().openUnreachable();
      const onDegraded = vi.fn();
      const mirror = new ControlMirror(dead, { onDegraded });
      expect(() => {
        for (const event of events) mirror.onEvent(event);
      }).not.toThrow();
      await mirror.close();
      await dead.close().catch(() => {});
      expect(onDegraded).toHaveBeenCalledTimes(1);
      expect(onDegraded.mock.calls[0]?.[0]).toContain('db_off');
      expect(mirror.stats).toMatchObject({ written: 0, dropped: 19, degraded: true });

      await withStore(harness(), async (store) => {
        const runLogs = new FileRunLogStore(runsDir);
        const first = await syncRunlogs(store, runLogs);
        expect(first).toEqual({
          runsScanned: 1,
          runsUpdated: 1,
          eventsInserted: 19,
          modelCallsInserted: 5,
          runsInterrupted: 0,
          failed: [],
        });
        await expectMirrored(store, runsDir, id);
        expect((await store.getRun(id))?.status).toBe('succeeded');
        const second = await syncRunlogs(store, runLogs);
        expect(second).toEqual({
          runsScanned: 1,
          runsUpdated: 0,
          eventsInserted: 0,
          modelCallsInserted: 0,
          runsInterrupted: 0,
          failed: [],
        });
      });
    });

    it('stays quiet when the database stops mid-run, and sync fills in exactly what was missing', async () => {
      const runsDir = await tempRunsDir();
      const id = runId('midrun');
      const events = await writeRunlog(runsDir, id, '2029-01-05T10:00:00Z', succeededRun());
      const { store, interrupt } = await harness().openInterruptible();
      const onDegraded = vi.fn();
      const mirror = new ControlMirror(store, { onDegraded });
      for (const event of events.slice(0, 8)) mirror.onEvent(event);
      await mirror.flush();
      expect(mirror.stats.written).toBe(8);

      await interrupt();
      expect(() => {
        for (const event of events.slice(8)) mirror.onEvent(event);
      }).not.toThrow();
      await mirror.close();
      await store.close().catch(() => {});
      expect(onDegraded).toHaveBeenCalledTimes(1);
      expect(mirror.stats).toMatchObject({ written: 8, dropped: 11, degraded: true });

      await withStore(harness(), async (fresh) => {
        expect((await fresh.runEvents(id)).length).toBe(8);
        expect((await fresh.getRun(id))?.status).toBe('running');
        const runLogs = new FileRunLogStore(runsDir);
        // The calls at seq 3, 7 and 8 were mirrored before the cut; those at 13 and 17 were not.
        expect(await syncRunlogs(fresh, runLogs)).toMatchObject({
          eventsInserted: 11,
          modelCallsInserted: 2,
        });
        await expectMirrored(fresh, runsDir, id);
        expect((await fresh.getRun(id))?.status).toBe('succeeded');
        expect(await fresh.modelCalls(id)).toHaveLength(5);
        expect(await syncRunlogs(fresh, runLogs)).toMatchObject({ eventsInserted: 0, runsUpdated: 0 });
      });
    });

    it('syncs several runs idempotently, without duplicating what the mirror wrote', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const mirrored = runId('synced-a');
        const unmirrored = runId('synced-b');
        const mirror = new ControlMirror(store);
        for (const e of await writeRunlog(runsDir, mirrored, '2029-01-06T10:00:00Z', succeededRun()))
          mirror.onEvent(e);
        await mirror.close();
        await writeRunlog(runsDir, unmirrored, '2029-01-06T11:00:00Z', unavailableRun());

        const runLogs = new FileRunLogStore(runsDir);
        const first = await syncRunlogs(store, runLogs);
        expect(first).toEqual({
          runsScanned: 2,
          runsUpdated: 1,
          eventsInserted: 5,
          modelCallsInserted: 3,
          runsInterrupted: 0,
          failed: [],
        });
        const snapshot = [await store.getRun(mirrored), await store.getRun(unmirrored)];
        const second = await syncRunlogs(store, runLogs);
        expect(second).toEqual({
          runsScanned: 2,
          runsUpdated: 0,
          eventsInserted: 0,
          modelCallsInserted: 0,
          runsInterrupted: 0,
          failed: [],
        });
        expect([await store.getRun(mirrored), await store.getRun(unmirrored)]).toEqual(snapshot);
        await expectMirrored(store, runsDir, mirrored);
        await expectMirrored(store, runsDir, unmirrored);
      });
    });

    it('keeps what a person was asked and answered (SPEC §19): the mirror, then a sync of both halves, idempotently', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('approvals');
        const [start, ...rest] = succeededRun();
        const asked: RunEventInput = {
          kind: 'approval_requested',
          step: 1,
          call_id: 'call_9',
          approval_id: `apr_${id.slice(-6)}x`,
          tool: 'shell',
          argv: ['cargo', 'tree'],
          rule: 'policy.rules[0] (shell "cargo tree": ask)',
          on_approval: 'park',
          proposals: [{ label: 'cargo tree', matches: 'exactly', does_not_match: 'more' }],
        };
        const answered: RunEventInput = {
          kind: 'approval_decided',
          step: 1,
          call_id: 'call_9',
          approval_id: `apr_${id.slice(-6)}x`,
          state: 'denied',
          scope: 'once',
          channel: 'http',
          by: 'ana',
          message: 'use cargo metadata',
          answered_at: '2029-01-07T10:05:00Z',
        };
        const events = await writeRunlog(runsDir, id, '2029-01-07T10:00:00Z', [
          start!,
          asked,
          answered,
          ...rest,
        ]);
        // The mirror sees the request only (the store went away before the answer); sync adds it.
        const mirror = new ControlMirror(store);
        for (const event of events.slice(0, 2)) mirror.onEvent(event);
        await mirror.close();
        expect(await store.runApprovals?.(id)).toMatchObject([
          { state: 'pending', argv: ['cargo', 'tree'], channel: null },
        ]);
        const runLogs = new FileRunLogStore(runsDir);
        await syncRunlogs(store, runLogs);
        await syncRunlogs(store, runLogs);
        expect(await store.runApprovals?.(id)).toEqual([
          {
            approval_id: `apr_${id.slice(-6)}x`,
            run_id: id,
            call_id: 'call_9',
            tool: 'shell',
            argv: ['cargo', 'tree'],
            rule: 'policy.rules[0] (shell "cargo tree": ask)',
            on_approval: 'park',
            state: 'denied',
            scope: 'once',
            channel: 'http',
            answered_by: 'ana',
            message: 'use cargo metadata',
          },
        ]);
      });
    });

    it('knows a run is complete only once it holds its run_end and every line before it', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('complete');
        const events = await writeRunlog(runsDir, id, '2029-01-07T10:00:00Z', succeededRun());
        await store.migrate();
        const end = events.length - 1;
        // Everything but a line in the middle, run_end included: not complete.
        await store.write({ events: [...events.slice(0, 3), ...events.slice(4)], modelCalls: [] });
        expect((await store.mirroredRuns()).get(id)).toMatchObject({ events: end, complete: false });
        // The missing line arrives: complete, and sync no longer needs to read the runlog.
        await store.write({ events: [events[3]!], modelCalls: [] });
        expect((await store.mirroredRuns()).get(id)).toMatchObject({ events: end + 1, complete: true });
        const unfinished = runId('unfinished');
        const started = await writeRunlog(
          runsDir,
          unfinished,
          '2029-01-07T11:00:00Z',
          succeededRun().slice(0, 3),
        );
        await store.write({ events: started, modelCalls: [] });
        expect((await store.mirroredRuns()).get(unfinished)).toMatchObject({ events: 3, complete: false });
      });
    });

    it('marks a run interrupted only while it is running, and a later run_end still wins', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const cut = runId('cut');
        const ended = runId('ended');
        const events = await writeRunlog(runsDir, cut, '2029-01-08T10:00:00Z', succeededRun());
        await store.write({ events: events.slice(0, 8), modelCalls: [] });
        await store.write({
          events: await writeRunlog(runsDir, ended, '2029-01-08T11:00:00Z', unavailableRun()),
          modelCalls: [],
        });

        expect(await store.markInterrupted([cut, ended, 'no-such-run'])).toBe(1);
        expect(await store.getRun(cut)).toMatchObject({ status: 'interrupted', ended_at: null });
        expect((await store.getRun(ended))?.status).toBe('failed');
        expect(await store.markInterrupted([cut])).toBe(0);
        expect(await store.markInterrupted([])).toBe(0);

        // The run was alive after all (on a host sync could not check): its run_end overwrites.
        await store.write({ events: events.slice(8), modelCalls: [] });
        expect(await store.getRun(cut)).toMatchObject({ status: 'succeeded', steps: 4 });
      });
    });

    it('syncs a run whose process is gone as interrupted, and leaves one whose process lives running', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const dead = runId('dead');
        const alive = runId('alive');
        const owned = (pid: number) => {
          const [start, ...rest] = succeededRun().slice(0, 6);
          return [{ ...start!, pid, host: 'box' } as RunEventInput, ...rest];
        };
        await writeRunlog(runsDir, dead, '2029-01-09T10:00:00Z', owned(1111));
        await writeRunlog(runsDir, alive, '2029-01-09T11:00:00Z', owned(2222));
        const liveness: ProcessLiveness = { isOwnerAlive: (owner) => owner.pid === 2222 };
        const runLogs = new FileRunLogStore(runsDir);

        expect(await syncRunlogs(store, runLogs, { liveness })).toMatchObject({
          runsUpdated: 2,
          eventsInserted: 12,
          runsInterrupted: 1,
        });
        expect((await store.getRun(dead))?.status).toBe('interrupted');
        expect((await store.getRun(alive))?.status).toBe('running');
        await expectMirrored(store, runsDir, dead);
        expect(await syncRunlogs(store, runLogs, { liveness })).toMatchObject({
          runsUpdated: 0,
          eventsInserted: 0,
          runsInterrupted: 0,
        });
      });
    });

    it('stores lines with NUL bytes and lone surrogates, which Postgres text refuses', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const id = runId('nul');
        const events = await writeRunlog(runsDir, id, '2029-01-07T10:00:00Z', [
          succeededRun()[0]!,
          {
            kind: 'tool_result',
            step: 1,
            call_id: 'c',
            tool: 'read_file',
            result: 'a\u0000b\ud800c',
            duration_ms: 1,
          },
        ]);
        await store.write({ events, modelCalls: [] });
        const [, result] = await store.runEvents(id);
        expect(result).toMatchObject({ kind: 'tool_result', result: 'a\uFFFDb\uFFFDc' });
      });
    });

    it('exports usage, health and insights over the last 7 days', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const mirror = new ControlMirror(store);
        const runs = [
          await writeRunlog(runsDir, runId('exp-ok'), '2030-03-10T10:00:00Z', succeededRun()),
          await writeRunlog(runsDir, runId('exp-down'), '2030-03-11T10:00:00Z', unavailableRun()),
          await writeRunlog(runsDir, runId('exp-lacks'), '2030-03-11T11:00:00Z', lacksToolsRun()),
          // Outside the window: must not count.
          await writeRunlog(runsDir, runId('exp-old'), '2030-03-01T10:00:00Z', succeededRun()),
        ];
        for (const event of runs.flat()) mirror.onEvent(event);
        await mirror.close();

        const now = new Date('2030-03-12T00:00:00Z');
        const exports = await buildExports(store, { now });
        const meta = {
          generated_at: '2030-03-12T00:00:00.000Z',
          window: { from: '2030-03-05T00:00:00.000Z', to: '2030-03-12T00:00:00.000Z', days: 7 },
          db_off: false,
        };
        expect(exports.lm_usage_7d).toEqual({
          ...meta,
          rows: [
            {
              day: '2030-03-10',
              model: 'qwen2.5-coder-7b',
              calls: 5,
              successes: 4,
              failures: 1,
              prompt_tokens: 1000,
              completion_tokens: 140,
              total_tokens: 1140,
            },
            {
              day: '2030-03-11',
              model: 'gemma:2b',
              calls: 1,
              successes: 0,
              failures: 1,
              prompt_tokens: 0,
              completion_tokens: 0,
              total_tokens: 0,
            },
            {
              day: '2030-03-11',
              model: 'llama3.1:8b',
              calls: 3,
              successes: 0,
              failures: 3,
              prompt_tokens: 0,
              completion_tokens: 0,
              total_tokens: 0,
            },
          ],
        });
        expect(exports.lm_health_7d).toEqual({
          ...meta,
          rows: [
            {
              tool: 'lm_studio',
              day: '2030-03-10',
              calls: 5,
              successes: 4,
              failures: 1,
              error_rate: 0.2,
              mean_latency_ms: 900,
              p95_latency_ms: expect.closeTo(1170, 5),
            },
            {
              tool: 'ollama',
              day: '2030-03-11',
              calls: 4,
              successes: 0,
              failures: 4,
              error_rate: 1,
              mean_latency_ms: null,
              p95_latency_ms: null,
            },
          ],
        });
        expect(exports.lm_insights_7d).toEqual({
          ...meta,
          totals: { total_calls: 9, successes: 4, failures: 5, runs: 3, total_tokens: 1140 },
          top_models: [
            { model: 'qwen2.5-coder-7b', calls: 5, total_tokens: 1140 },
            { model: 'llama3.1:8b', calls: 3, total_tokens: 0 },
            { model: 'gemma:2b', calls: 1, total_tokens: 0 },
          ],
          slowest_model: { model: 'qwen2.5-coder-7b', mean_latency_ms: 900, calls: 4 },
          error_reasons: [
            { reason: 'connection refused', count: 2 },
            { reason: 'HTTP 503', count: 1 },
            { reason: 'backend_unavailable', count: 1 },
            { reason: 'model_lacks_tools', count: 1 },
          ],
          runs_by_status: [
            { status: 'failed', runs: 2 },
            { status: 'succeeded', runs: 1 },
          ],
        });
      });
    });

    it('decides the indicator: healthy, degraded and no_calls from the calls of the last 24 hours', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const mirror = new ControlMirror(store);
        // One retried attempt in five calls: an error rate of exactly 0.2 is still healthy.
        for (const e of await writeRunlog(runsDir, runId('ind-ok'), '2031-05-01T10:00:00Z', succeededRun()))
          mirror.onEvent(e);
        for (const e of await writeRunlog(
          runsDir,
          runId('ind-bad'),
          '2031-05-03T10:00:00Z',
          unavailableRun(),
        ))
          mirror.onEvent(e);
        await mirror.close();

        const at = async (iso: string) => (await buildExports(store, { now: new Date(iso) })).lm_indicator;
        expect(await at('2031-05-01T12:00:00Z')).toEqual({
          status: 'healthy',
          reason: 'ok',
          success_rate: 0.8,
          error_rate: 0.2,
          total_calls: 5,
          db_off: false,
        });
        expect(await at('2031-05-03T12:00:00Z')).toEqual({
          status: 'degraded',
          reason: 'high_error_rate',
          success_rate: 0,
          error_rate: 1,
          total_calls: 3,
          db_off: false,
        });
        expect(await at('2031-05-02T12:00:00Z')).toEqual({
          status: 'offline',
          reason: 'no_calls',
          success_rate: null,
          error_rate: null,
          total_calls: 0,
          db_off: false,
        });
      });
    });

    it('exports db_off files, without throwing, when the database is unreachable', async () => {
      const dead = harness().openUnreachable();
      const outDir = join(await tempRunsDir(), 'exports');
      const result = await exportAll(dead, outDir, { now: new Date('2031-01-01T00:00:00Z') });
      await dead.close().catch(() => {});
      expect(result.dbOff).toBe(true);
      const read = async (file: string) => JSON.parse(await readFile(join(outDir, file), 'utf8')) as unknown;
      expect(await read('lm_indicator.json')).toEqual({
        status: 'offline',
        reason: 'db_off',
        success_rate: null,
        error_rate: null,
        total_calls: 0,
        db_off: true,
      });
      expect(await read('lm_usage_7d.json')).toMatchObject({ db_off: true, rows: [] });
      expect(await read('lm_health_7d.json')).toMatchObject({ db_off: true, rows: [] });
      expect(await read('lm_insights_7d.json')).toMatchObject({
        db_off: true,
        top_models: [],
        slowest_model: null,
      });
    });

    it('writes the four export files from a live database', async () => {
      await withStore(harness(), async (store) => {
        const outDir = join(await tempRunsDir(), 'out');
        const result = await exportAll(store, outDir, { now: new Date('2032-01-01T00:00:00Z') });
        expect(result.dbOff).toBe(false);
        expect(result.files.map((file) => file.slice(outDir.length + 1))).toEqual([
          'lm_usage_7d.json',
          'lm_health_7d.json',
          'lm_insights_7d.json',
          'lm_indicator.json',
        ]);
        expect(JSON.parse(await readFile(join(outDir, 'lm_indicator.json'), 'utf8'))).toMatchObject({
          reason: 'no_calls',
          db_off: false,
        });
      });
    });

    it('keeps a battery and one row per cell, rewritten idempotently as cells end', async () => {
      await withStore(harness(), async (store) => {
        expect(isBatterySink(store)).toBe(true);
        if (!isBatterySink(store) || !(store instanceof SqlControlStore)) return;
        const id = `bat-contract-${Math.random().toString(36).slice(2, 8)}`;
        const row = {
          id,
          name: 'units-basics',
          specialist: 'units',
          file: '/tmp/battery.yaml',
          models: ['lab/alpha-7b', 'lab/ghost-1b'],
          started_at: '2034-01-01T10:00:00.000Z',
          ended_at: null,
          status: 'running' as const,
        };
        await store.recordBattery(row);
        const cell: CellResult = {
          task: 'km-to-mi',
          model: 'lab/alpha-7b',
          repeat: 1,
          status: 'max_steps',
          passed: false,
          failed_check: 'status',
          error: 'expected succeeded, the run ended max_steps\u0000',
          run_id: 'run-1',
          steps: 3,
          tokens: 420,
          seconds: 1.25,
          checks: [{ check: 'status', outcome: 'failed', message: 'expected succeeded' }],
          started_at: '2034-01-01T10:00:01.000Z',
          ended_at: '2034-01-01T10:00:02.250Z',
        };
        await store.recordBatteryCell(id, cell);
        await store.recordBatteryCell(id, {
          ...cell,
          model: 'lab/ghost-1b',
          status: 'not_run',
          failed_check: 'run',
          error: 'No backend has the model',
          run_id: null,
          steps: 0,
          tokens: 0,
          checks: [],
        });
        // A resumed battery runs the cell again: the same row, now with its latest result.
        await store.recordBatteryCell(id, {
          ...cell,
          status: 'succeeded',
          passed: true,
          failed_check: null,
          error: null,
          run_id: 'run-2',
        });
        await store.recordBattery({ ...row, status: 'done', ended_at: '2034-01-01T10:01:00.000Z' });

        expect(await store.battery(id)).toMatchObject({
          id,
          name: 'units-basics',
          models: ['lab/alpha-7b', 'lab/ghost-1b'],
          status: 'done',
        });
        expect(new Date((await store.battery(id))?.ended_at as string).toISOString()).toBe(
          '2034-01-01T10:01:00.000Z',
        );
        const cells = await store.batteryCells(id);
        expect(cells).toHaveLength(2);
        expect(cells[0]).toMatchObject({
          task: 'km-to-mi',
          model: 'lab/alpha-7b',
          repeat: 1,
          status: 'succeeded',
          passed: true,
          failed_check: null,
          run_id: 'run-2',
          steps: 3,
          tokens: 420,
          seconds: 1.25,
          checks: [{ check: 'status', outcome: 'failed', message: 'expected succeeded' }],
        });
        expect(cells[1]).toMatchObject({ model: 'lab/ghost-1b', status: 'not_run', run_id: null });
        expect(await store.battery('bat-none')).toBeNull();
      });
    });

    it('keeps one model card per model and server, never an older probe over a newer one', async () => {
      await withStore(harness(), async (store) => {
        expect(isModelCardRows(store)).toBe(true);
        if (!isModelCardRows(store)) return;
        const model = `contract-${Math.random().toString(36).slice(2, 8)}:7b`;
        const card: ModelCard = {
          model,
          backend: 'ollama',
          baseUrl: 'http://gpu-box:11434',
          serverVersion: '0.12.6',
          quantisation: 'Q4_K_M',
          probedAt: '2034-02-01T10:00:00.000Z',
          tools: 'native',
          dialect: null,
          score: 1,
          probes: [
            {
              id: 'native_call',
              outcome: 'pass',
              detail: 'one native call\u0000',
              figures: { ttft_ms: 12 },
              exchanges: [{ request: { messages: [] }, reply: { content: 'x' } }],
            },
          ],
          tokens: { prompt: 100, completion: 20 },
          battery: {},
        };
        await store.saveModelCard(card);
        await store.saveModelCard({ ...card, probedAt: '2034-01-01T10:00:00.000Z', score: 0 });
        const mine = () => store.modelCards().then((cards) => cards.filter((c) => c.model === model));
        expect(await mine()).toEqual([
          {
            ...card,
            probes: [{ ...card.probes[0], detail: 'one native call\uFFFD', exchanges: [] }],
          },
        ]);
        const marked = {
          ...card,
          battery: { rust: { passRate: 0.5, runs: 4, at: '2034-02-02T10:00:00.000Z' } },
        };
        await store.saveModelCard(marked);
        expect((await mine())[0]?.battery).toEqual(marked.battery);
      });
    });

    it('lists runs newest first', async () => {
      await withStore(harness(), async (store) => {
        const runsDir = await tempRunsDir();
        const older = runId('list-old');
        const newer = runId('list-new');
        await store.write({
          events: await writeRunlog(runsDir, older, '2033-01-01T10:00:00Z', lacksToolsRun()),
          modelCalls: [],
        });
        await store.write({
          events: await writeRunlog(runsDir, newer, '2033-01-02T10:00:00Z', lacksToolsRun()),
          modelCalls: [],
        });
        const ids = (await store.listRuns({ limit: 1000 })).map((run) => run.id);
        expect(ids.indexOf(newer)).toBeLessThan(ids.indexOf(older));
        expect(await store.getRun('no-such-run')).toBeNull();
      });
    });
  });
}

import { describe, expect, it } from 'vitest';
import type { ControlRunRow } from '../../../src/application/control/control-ports.ts';
import type { ProcessLiveness } from '../../../src/application/runs/liveness-ports.ts';
import {
  type ControlRunListing,
  type RunLogReader,
  RunReadModel,
} from '../../../src/application/runs/run-read-model.ts';
import { FabricError } from '../../../src/domain/errors.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';

const NOW = new Date('2030-01-01T10:05:00.000Z');

/** Runlogs kept in a map, as the file store answers: newest id first, `run_not_found` else. */
function runLogs(logs: Record<string, RunEvent[]>): RunLogReader {
  return {
    pathOf: (id) => `runs/${id}/runlog.jsonl`,
    async read(ref) {
      const events = logs[ref];
      if (events === undefined) throw new FabricError('run_not_found', `No run ${ref}.`);
      return { runId: ref, location: `runs/${ref}/runlog.jsonl`, events, torn: false };
    },
    async list() {
      return Object.keys(logs).sort().reverse();
    },
  };
}

/** A control plane of rows and mirrored events. */
function controlPlane(rows: ControlRunRow[], events: Record<string, RunEvent[]> = {}): ControlRunListing {
  return {
    async listRuns({ limit }) {
      return [...rows].sort((a, b) => b.id.localeCompare(a.id)).slice(0, limit);
    },
    async getRun(id) {
      return rows.find((row) => row.id === id) ?? null;
    },
    async runEvents(id, after = 0) {
      return (events[id] ?? []).filter((event) => event.seq > after);
    },
  };
}

/** Pid 1 is alive, pid 2 is gone, any other is on another host. */
const liveness: ProcessLiveness = {
  isOwnerAlive: ({ pid }) => (pid === 1 ? true : pid === 2 ? false : 'unknown'),
};
const check = () => ({ liveness, now: NOW });

function run(
  id: string,
  inputs: readonly RunEventInput[],
  startedAt = '2030-01-01T10:00:00.000Z',
): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({
        v: 1,
        ts: new Date(Date.parse(startedAt) + index * 1000).toISOString(),
        run_id: id,
        seq: index + 1,
        ...input,
      }) as RunEvent,
  );
}

function start(specialist = 'units', pid = 1): RunEventInput {
  return {
    kind: 'run_start',
    specialist,
    task: 'Convert 3 km',
    model: 'qwen3:8b',
    backend: 'lm_studio',
    workspace: null,
    config_digest: 'abc',
    fabric_version: '0.1.0',
    max_steps: 30,
    budget_s: 600,
    pid,
    host: 'here',
  } as RunEventInput;
}

const END: RunEventInput = {
  kind: 'run_end',
  status: 'succeeded',
  payload: { summary: 'done' },
  error: null,
  steps: 1,
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  duration_ms: 2000,
};

function row(id: string, fields: Partial<ControlRunRow> = {}): ControlRunRow {
  return {
    id,
    specialist: 'units',
    task: 'Convert 3 km',
    model: null,
    backend: null,
    status: 'queued',
    started_at: null,
    ended_at: null,
    steps: null,
    prompt_tokens: null,
    completion_tokens: null,
    total_tokens: null,
    duration_ms: null,
    payload: null,
    error: null,
    ...fields,
  };
}

describe('RunReadModel', () => {
  it('shows a run only in the runlogs from its events', async () => {
    const model = new RunReadModel({ runLogs: runLogs({ a: run('a', [start(), END]) }), check });
    expect(await model.show('a')).toMatchObject({
      run_id: 'a',
      status: 'succeeded',
      specialist: 'units',
      steps: 1,
      total_tokens: 12,
      usage: { total_tokens: 12 },
      payload: { summary: 'done' },
      runlog: 'runs/a/runlog.jsonl',
      torn: false,
      live: false,
      source: 'runlog',
    });
  });

  it('shows a run only in the control plane from its row and mirrored events', async () => {
    const control = controlPlane([row('w', { status: 'running' })], { w: run('w', [start('units', 9)]) });
    const model = new RunReadModel({ runLogs: runLogs({}), control: async () => control, check });
    expect(await model.show('w')).toMatchObject({
      run_id: 'w',
      status: 'running',
      model: 'qwen3:8b',
      events: 1,
      runlog: null,
      source: 'control',
    });
  });

  it("shows a queued run with the row's status, specialist and task", async () => {
    const control = controlPlane([row('q')]);
    const model = new RunReadModel({ runLogs: runLogs({}), control: async () => control, check });
    expect(await model.show('q')).toMatchObject({
      status: 'queued',
      specialist: 'units',
      task: 'Convert 3 km',
      started_at: null,
      ended_at: null,
      steps: 0,
      usage: null,
    });
  });

  it("takes a worker's end from the row when no run_end was mirrored", async () => {
    const error = { code: 'no_model', message: 'No model.' };
    const control = controlPlane([row('f', { status: 'failed', error, ended_at: '2030-01-01T10:01:00Z' })]);
    const model = new RunReadModel({ runLogs: runLogs({}), control: async () => control, check });
    expect(await model.show('f')).toMatchObject({
      status: 'failed',
      error,
      ended_at: '2030-01-01T10:01:00Z',
    });
  });

  it('lets the mirrored run_end decide over the row', async () => {
    const control = controlPlane([row('e', { status: 'running' })], { e: run('e', [start(), END]) });
    const model = new RunReadModel({ runLogs: runLogs({}), control: async () => control, check });
    expect(await model.show('e')).toMatchObject({ status: 'succeeded', total_tokens: 12 });
  });

  it('shows a run whose process is gone as interrupted, from a runlog and from the control plane', async () => {
    const gone = run('g', [start('units', 2)]);
    const control = controlPlane([row('c', { status: 'running' })], { c: run('c', [start('units', 2)]) });
    const model = new RunReadModel({ runLogs: runLogs({ g: gone }), control: async () => control, check });
    expect((await model.show('g')).status).toBe('interrupted');
    expect((await model.show('c')).status).toBe('interrupted');
  });

  it('leaves a running row running until the reaper marks it, when the row decides', async () => {
    const control = controlPlane([row('c', { status: 'running' })], { c: run('c', [start('units', 2)]) });
    const model = new RunReadModel({
      runLogs: runLogs({}),
      control: async () => control,
      check,
      controlRowDecides: true,
    });
    expect((await model.show('c')).status).toBe('running');
  });

  it('shows a run live in this process as running, whatever its owner', async () => {
    const events = run('l', [start('units', 2)]);
    const model = new RunReadModel({
      runLogs: runLogs({}),
      live: { liveRunIds: () => ['l'], liveEvents: (id) => (id === 'l' ? events : undefined) },
      check,
    });
    expect(await model.show('l')).toMatchObject({ status: 'running', live: true, source: 'live' });
  });

  it('answers run_not_found when neither the runlogs nor the control plane have the run', async () => {
    const control = controlPlane([]);
    const model = new RunReadModel({ runLogs: runLogs({}), control: async () => control, check });
    await expect(model.show('nope')).rejects.toMatchObject({ code: 'run_not_found' });
  });

  it('answers run_not_found when the control plane cannot be reached', async () => {
    const model = new RunReadModel({
      runLogs: runLogs({}),
      control: () => Promise.reject(new Error('refused')),
      check,
    });
    await expect(model.show('nope')).rejects.toMatchObject({ code: 'run_not_found' });
  });

  it("lists the runlogs and the control plane's rows once each, newest id first", async () => {
    const logs = { r1: run('r1', [start(), END]), r3: run('r3', [start(), END]) };
    const control = controlPlane(
      [row('r2'), row('r3', { status: 'succeeded' }), row('r4', { status: 'running' })],
      {
        r4: run('r4', [start('units', 9)]),
      },
    );
    const model = new RunReadModel({ runLogs: runLogs(logs), controlListing: async () => control, check });
    const page = await model.list({ limit: 10 });
    expect(page.runs.map((r) => [r.run_id, r.status, r.source])).toEqual([
      ['r4', 'running', 'control'],
      ['r3', 'succeeded', 'runlog'],
      ['r2', 'queued', 'control'],
      ['r1', 'succeeded', 'runlog'],
    ]);
    expect(page.more).toBe(false);
  });

  it('lists only the runlogs when the control plane is there for show alone', async () => {
    const control = controlPlane([row('q')]);
    const model = new RunReadModel({
      runLogs: runLogs({ a: run('a', [start(), END]) }),
      control: async () => control,
      check,
    });
    expect((await model.list({ limit: 5 })).runs.map((r) => r.run_id)).toEqual(['a']);
    expect((await model.show('q')).status).toBe('queued');
  });

  it('lets a row that ended the run decide over a runlog left open (its owner on another host)', async () => {
    const logs = { x: run('x', [start('units', 9)]) };
    const control = controlPlane([row('x', { status: 'interrupted' })]);
    const model = new RunReadModel({ runLogs: runLogs(logs), controlListing: async () => control, check });
    expect((await model.list({ limit: 5 })).runs[0]).toMatchObject({
      status: 'interrupted',
      source: 'runlog',
    });
    // Without the row, the runlog alone cannot tell within the run's budget.
    expect(
      (await new RunReadModel({ runLogs: runLogs(logs), check }).list({ limit: 5 })).runs[0]?.status,
    ).toBe('running');
  });

  it('lists the runlogs alone, and says why, when the control plane cannot be read', async () => {
    const model = new RunReadModel({
      runLogs: runLogs({ a: run('a', [start(), END]) }),
      controlListing: () => Promise.reject(new Error('held by another process')),
      check,
    });
    const page = await model.list({ limit: 5 });
    expect(page.runs.map((r) => r.run_id)).toEqual(['a']);
    expect(String(page.controlError)).toContain('held by another process');
  });

  it('filters by status, specialist and before, and pages with more', async () => {
    const logs = {
      r1: run('r1', [start('units'), END]),
      r2: run('r2', [start('rust'), END]),
      r3: run('r3', [start('units', 2)]),
      r4: run('r4', [start('units'), END]),
      r5: run('r5', [start('units'), END]),
    };
    const model = new RunReadModel({ runLogs: runLogs(logs), check });
    const ids = async (filter: Parameters<RunReadModel['list']>[0]) =>
      (await model.list(filter)).runs.map((r) => r.run_id);
    expect(await ids({ limit: 10, status: 'interrupted' })).toEqual(['r3']);
    expect(await ids({ limit: 10, specialist: 'rust' })).toEqual(['r2']);
    expect(await ids({ limit: 10, before: 'r3' })).toEqual(['r2', 'r1']);
    expect(await model.list({ limit: 2, status: 'succeeded' })).toMatchObject({ more: true });
    expect(await ids({ limit: 2, status: 'succeeded' })).toEqual(['r5', 'r4']);
    expect(await model.list({ limit: 4, status: 'succeeded' })).toMatchObject({ more: false });
  });

  it('leaves an unreadable runlog out of the list', async () => {
    const store = runLogs({ a: run('a', [start(), END]) });
    const model = new RunReadModel({
      runLogs: { ...store, list: async () => ['b', 'a'] },
      check,
    });
    expect((await model.list({ limit: 5 })).runs.map((r) => r.run_id)).toEqual(['a']);
  });

  it("keeps ended runs' records when asked to, and re-reads those in progress", async () => {
    const logs: Record<string, RunEvent[]> = { a: run('a', [start(), END]), b: run('b', [start()]) };
    let reads = 0;
    const store = runLogs(logs);
    const model = new RunReadModel({
      runLogs: {
        ...store,
        read: (ref) => {
          reads += 1;
          return store.read(ref);
        },
      },
      check,
      cacheEnded: 10,
    });
    await model.list({ limit: 5 });
    await model.list({ limit: 5 });
    expect(reads).toBe(3);
  });
});

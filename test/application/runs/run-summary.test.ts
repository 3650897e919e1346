import { describe, expect, it } from 'vitest';
import type {
  LivenessCheck,
  ProcessLiveness,
  RunOwner,
} from '../../../src/application/runs/liveness-ports.ts';
import {
  UNCHECKED_OWNER_GRACE_MS,
  runStatusWithoutEnd,
  summarizeRun,
} from '../../../src/application/runs/run-summary.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';

const STARTED = '2030-01-01T10:00:00.000Z';

/** A liveness port that answers from a table, and remembers what it was asked. */
function scriptedLiveness(answers: Record<number, boolean | 'unknown'>): ProcessLiveness & {
  asked: RunOwner[];
} {
  const asked: RunOwner[] = [];
  return {
    asked,
    isOwnerAlive(owner) {
      asked.push(owner);
      return answers[owner.pid] ?? 'unknown';
    },
  };
}

function at(iso: string, liveness: ProcessLiveness): LivenessCheck {
  return { liveness, now: new Date(iso) };
}

function stamp(inputs: readonly RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({
        v: 1,
        ts: new Date(Date.parse(STARTED) + index * 1000).toISOString(),
        run_id: 'run-1',
        seq: index + 1,
        ...input,
      }) as RunEvent,
  );
}

function start(owner: Partial<RunOwner> = {}): RunEventInput {
  return {
    kind: 'run_start',
    specialist: 'units',
    task: 'Convert 3 km',
    model: 'qwen3:8b',
    backend: 'lm_studio http://127.0.0.1:1234',
    workspace: null,
    config_digest: 'abc',
    fabric_version: '0.1.0',
    max_steps: 30,
    budget_s: 600,
    ...owner,
  };
}

const REQUEST: RunEventInput = {
  kind: 'llm_request',
  step: 1,
  model: 'qwen3:8b',
  messages: 2,
  tools: [],
  final_turn: false,
  new_messages: [],
};

const END: RunEventInput = {
  kind: 'run_end',
  status: 'succeeded',
  payload: { summary: 'done' },
  error: null,
  steps: 1,
  usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
  duration_ms: 2000,
};

describe('summarizeRun', () => {
  it('shows the run_end status, without asking whether the owner is alive', () => {
    const liveness = scriptedLiveness({ 4242: false });
    const summary = summarizeRun(
      'run-1',
      stamp([start({ pid: 4242, host: 'box' }), REQUEST, END]),
      at(STARTED, liveness),
    );
    expect(summary).toMatchObject({
      status: 'succeeded',
      steps: 1,
      total_tokens: 12,
      owner: { pid: 4242, host: 'box' },
    });
    expect(liveness.asked).toEqual([]);
  });

  it('shows a run without run_end as running while its owner is alive', () => {
    const liveness = scriptedLiveness({ 4242: true });
    const events = stamp([start({ pid: 4242, host: 'box' }), REQUEST]);
    // Alive is alive, however long ago the run started.
    expect(summarizeRun('run-1', events, at('2031-01-01T00:00:00Z', liveness))).toMatchObject({
      status: 'running',
      steps: 1,
      ended_at: null,
    });
    expect(liveness.asked).toEqual([{ pid: 4242, host: 'box' }]);
  });

  it('shows a run without run_end as interrupted once its owner is gone', () => {
    const liveness = scriptedLiveness({ 4242: false });
    const events = stamp([start({ pid: 4242, host: 'box' }), REQUEST]);
    expect(summarizeRun('run-1', events, at(STARTED, liveness))).toMatchObject({
      status: 'interrupted',
      steps: 1,
      ended_at: null,
      error: null,
    });
  });

  it('takes a run whose owner cannot be checked as running until its budget and the grace have passed', () => {
    const liveness = scriptedLiveness({});
    const events = stamp([start({ pid: 4242, host: 'elsewhere' }), REQUEST]);
    const deadline = Date.parse(STARTED) + 600_000 + UNCHECKED_OWNER_GRACE_MS;
    const when = (ms: number) => at(new Date(ms).toISOString(), liveness);
    expect(summarizeRun('run-1', events, when(deadline)).status).toBe('running');
    expect(summarizeRun('run-1', events, when(deadline + 1)).status).toBe('interrupted');
  });

  it('judges a runlog written before pid and host were recorded by its budget alone', () => {
    const liveness = scriptedLiveness({});
    const events = stamp([start(), REQUEST]);
    expect(summarizeRun('run-1', events, at('2030-01-01T10:05:00Z', liveness))).toMatchObject({
      status: 'running',
      owner: null,
    });
    expect(summarizeRun('run-1', events, at('2030-01-02T10:00:00Z', liveness)).status).toBe('interrupted');
    expect(liveness.asked).toEqual([]);
  });

  it('counts the tokens of the responses so far while the run has no run_end, and the recorded totals after', () => {
    const liveness = scriptedLiveness({ 4242: true });
    const response = (total: number): RunEventInput => ({
      kind: 'llm_response',
      step: 1,
      content: '',
      tool_calls: [],
      finish_reason: 'tool_calls',
      usage: { prompt_tokens: total - 2, completion_tokens: 2, total_tokens: total },
      latency_ms: 10,
      attempts: 1,
      backend: 'lm_studio',
    });
    const going = stamp([
      start({ pid: 4242, host: 'box' }),
      REQUEST,
      response(40),
      { ...REQUEST, step: 2 },
      response(55),
    ]);
    expect(summarizeRun('run-1', going, at(STARTED, liveness))).toMatchObject({
      status: 'running',
      steps: 2,
      total_tokens: 95,
    });
    // run_end's usage is the record (it also counts calls that never produced a response line).
    expect(summarizeRun('run-1', [...going, ...stamp([END])], at(STARTED, liveness)).total_tokens).toBe(12);
  });

  it('shows a runlog with no line at all as interrupted: its process died before writing one', () => {
    expect(runStatusWithoutEnd([], at(STARTED, scriptedLiveness({})))).toBe('interrupted');
    expect(summarizeRun('run-1', [], at(STARTED, scriptedLiveness({}))).status).toBe('interrupted');
  });

  it('does not take a pid of 0 or a missing host for an owner', () => {
    const liveness = scriptedLiveness({ 0: false });
    const events = stamp([start({ pid: 0, host: 'box' }), REQUEST]);
    expect(summarizeRun('run-1', events, at(STARTED, liveness))).toMatchObject({
      status: 'running',
      owner: null,
    });
    expect(liveness.asked).toEqual([]);
  });
});

import { describe, expect, it } from 'vitest';
import { buildTimeline, describeEvent } from '../../../src/application/replay/replay-timeline.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';

const USAGE = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

/** Stamps events as a runlog would, 100 ms apart. */
function stamp(inputs: readonly RunEventInput[]): RunEvent[] {
  const t0 = Date.parse('2025-01-01T10:00:00.000Z');
  return inputs.map(
    (input, index) =>
      ({
        v: 1,
        ts: new Date(t0 + index * 100).toISOString(),
        run_id: 'run-1',
        seq: index + 1,
        ...input,
      }) as RunEvent,
  );
}

const START: RunEventInput = {
  kind: 'run_start',
  specialist: 'units',
  task: 'Convert 3 km to miles',
  model: 'qwen/qwen3-coder-30b',
  backend: 'lm_studio http://127.0.0.1:1234',
  workspace: null,
  config_digest: 'abc',
  fabric_version: '0.1.0',
  max_steps: 30,
  budget_s: 600,
};

const CONVERSION: RunEventInput[] = [
  START,
  {
    kind: 'llm_request',
    step: 1,
    model: 'm',
    messages: 2,
    tools: ['convert_units', 'finish_task'],
    final_turn: false,
    new_messages: [],
  },
  { kind: 'llm_retry', step: 1, attempt: 1, delay_ms: 5, reason: 'connection refused' },
  {
    kind: 'llm_response',
    step: 1,
    content: 'Converting first.',
    tool_calls: [{ id: 'c1', name: 'convert_units', arguments: '{"value":3,"from":"km","to":"mi"}' }],
    finish_reason: 'tool_calls',
    usage: USAGE,
    latency_ms: 40,
    attempts: 2,
    backend: 'lm_studio http://127.0.0.1:1234',
  },
  {
    kind: 'tool_call',
    step: 1,
    call_id: 'c1',
    tool: 'convert_units',
    arguments: '{"value":3,"from":"km","to":"mi"}',
  },
  {
    kind: 'tool_result',
    step: 1,
    call_id: 'c1',
    tool: 'convert_units',
    result: '3 km = 1.864114 mi',
    duration_ms: 1,
  },
  {
    kind: 'llm_request',
    step: 2,
    model: 'm',
    messages: 4,
    tools: ['convert_units', 'finish_task'],
    final_turn: false,
    new_messages: [],
  },
  {
    kind: 'llm_response',
    step: 2,
    content: '',
    tool_calls: [{ id: 'c2', name: 'finish_task', arguments: '{"summary":"done"}' }],
    finish_reason: 'tool_calls',
    usage: USAGE,
    latency_ms: 30,
    attempts: 1,
    backend: 'lm_studio http://127.0.0.1:1234',
  },
  { kind: 'tool_call', step: 2, call_id: 'c2', tool: 'finish_task', arguments: '{"summary":"done"}' },
  {
    kind: 'finish_rejected',
    step: 2,
    call_id: 'c2',
    reason: 'invalid_payload',
    message: '"answer" is required',
  },
  { kind: 'tool_call', step: 2, call_id: 'c3', tool: 'nope', arguments: '{}' },
  {
    kind: 'tool_error',
    step: 2,
    call_id: 'c3',
    tool: 'nope',
    error: 'There is no tool "nope".',
    reason: 'unknown_tool',
    duration_ms: 0,
  },
];

const END: RunEventInput = {
  kind: 'run_end',
  status: 'succeeded',
  payload: { summary: 'done', answer: '1.864114 mi' },
  error: null,
  steps: 3,
  usage: { prompt_tokens: 450, completion_tokens: 36, total_tokens: 486 },
  duration_ms: 1234,
};

describe('buildTimeline', () => {
  it('takes a run resumed after its run_end as going again, and its last run_end as its outcome', () => {
    const stopped: RunEventInput = { ...END, status: 'max_steps', payload: null, steps: 1 };
    const resumed: RunEventInput = {
      kind: 'run_resumed',
      from_seq: CONVERSION.length + 1,
      previous_status: 'max_steps',
      max_steps: 4,
      backend: 'lm_studio http://127.0.0.1:1234',
      model: 'qwen/qwen3-coder-30b',
      forced: false,
      drift: [],
      in_flight: [],
      turn_asked_again: false,
    };
    const going = buildTimeline({
      runId: 'run-1',
      events: stamp([...CONVERSION, stopped, resumed]),
      torn: false,
    });
    expect(going.totals.status).toBe('running');
    expect(going.entries.at(-1)?.text).toBe(
      `↺ resumed after max_steps (line ${CONVERSION.length + 1}) · qwen/qwen3-coder-30b on lm_studio http://127.0.0.1:1234`,
    );
    const ended = buildTimeline({
      runId: 'run-1',
      events: stamp([...CONVERSION, stopped, resumed, END]),
      torn: false,
    });
    expect(ended.totals).toMatchObject({ status: 'succeeded', steps: 3 });
  });

  it('gives one entry per runlog line with its step, its offset from the start and a one-line text', () => {
    const timeline = buildTimeline({ runId: 'run-1', events: stamp([...CONVERSION, END]), torn: false });
    expect(timeline.entries).toHaveLength(CONVERSION.length + 1);
    expect(timeline.entries[0]).toMatchObject({ step: null, offset_ms: 0, kind: 'run_start', tone: 'info' });
    expect(timeline.entries[0]?.text).toBe(
      'units · model qwen/qwen3-coder-30b (lm_studio http://127.0.0.1:1234) · Convert 3 km to miles',
    );
    const call = timeline.entries.find((entry) => entry.kind === 'tool_call');
    expect(call).toMatchObject({ step: 1, offset_ms: 400, tone: 'call' });
    expect(call?.text).toBe('→ convert_units {"value":3,"from":"km","to":"mi"}');
    expect(timeline.entries.find((entry) => entry.kind === 'tool_result')?.text).toBe('✓ 3 km = 1.864114 mi');
    expect(timeline.entries.find((entry) => entry.kind === 'finish_rejected')?.text).toBe(
      '✗ finish_task rejected (invalid_payload): "answer" is required',
    );
    expect(timeline.entries.find((entry) => entry.kind === 'tool_error')).toMatchObject({ tone: 'error' });
    expect(timeline.entries.at(-1)).toMatchObject({ step: null, kind: 'run_end', tone: 'ok' });
    expect(timeline.entries.at(-1)?.text).toBe('succeeded · 3 steps · 486 tokens · 1.23 s');
  });

  it('totals the run from run_end, and counts calls, errors, rejections and retries', () => {
    const timeline = buildTimeline({ runId: 'run-1', events: stamp([...CONVERSION, END]), torn: false });
    expect(timeline.specialist).toBe('units');
    expect(timeline.totals).toEqual({
      status: 'succeeded',
      steps: 3,
      usage: { prompt_tokens: 450, completion_tokens: 36, total_tokens: 486 },
      tool_calls: 3,
      tool_errors: 1,
      finish_rejected: 1,
      retries: 1,
      duration_ms: 1234,
    });
  });

  it('totals a run without run_end from its lines, marks it running and keeps the torn flag', () => {
    const timeline = buildTimeline({ runId: 'run-1', events: stamp(CONVERSION), torn: true });
    expect(timeline.torn).toBe(true);
    expect(timeline.totals.status).toBe('running');
    expect(timeline.totals.steps).toBe(2);
    expect(timeline.totals.usage.total_tokens).toBe(220);
    expect(timeline.totals.duration_ms).toBe((CONVERSION.length - 1) * 100);
  });

  it('shows an empty runlog as an empty timeline', () => {
    const timeline = buildTimeline({ runId: 'run-1', events: [], torn: false });
    expect(timeline.entries).toEqual([]);
    expect(timeline.totals).toMatchObject({ status: 'running', steps: 0, duration_ms: 0 });
  });

  it('keeps every description on one line, however long the tool result', () => {
    const [event] = stamp([
      {
        kind: 'tool_result',
        step: 1,
        call_id: 'c',
        tool: 'read_file',
        result: 'fn a() {}\n'.repeat(100),
        duration_ms: 1,
      },
    ]);
    const { text } = describeEvent(event!);
    expect(text).not.toContain('\n');
    expect(text.length).toBeLessThanOrEqual(163);
    expect(text.endsWith('…')).toBe(true);
  });

  it('shows a steer message and an asked argv with their control characters escaped', () => {
    const [steer, asked] = stamp([
      {
        kind: 'steer_message',
        id: 'm1',
        text: 'stop\u001b[2K\rall is fine\u0007',
        mode: 'steer',
        channel: 'http',
        after_step: 2,
      },
      {
        kind: 'approval_requested',
        step: 3,
        call_id: 'c',
        approval_id: 'apr_1',
        tool: 'shell',
        argv: ['cargo', 'tree', '-i', 'x\u001b[2K\r  y', '-p', 'foo bar'],
        rule: 'policy.rules[0]',
        on_approval: 'park',
        proposals: [],
      },
    ]);
    // CR is whitespace, flattened to a space like a newline; ESC and BEL are shown as escapes.
    expect(describeEvent(steer!).text).toBe('✉ steer after step 2 (http): stop\\e[2K all is fine\\a');
    expect(describeEvent(asked!).text).toBe(
      "? apr_1 asks: cargo tree -i $'x\\e[2K\\r  y' -p 'foo bar' (policy.rules[0]; park)",
    );
  });
});

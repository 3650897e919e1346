import { describe, expect, it } from 'vitest';
import { runFacts } from '../../../src/application/battery/run-facts.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';

const usage = { prompt_tokens: 100, completion_tokens: 10, total_tokens: 110 };

function log(...inputs: RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, seq) => ({ ...input, v: 1, ts: '2026-01-01T00:00:00.000Z', run_id: 'run-1', seq }) as RunEvent,
  );
}

function response(step: number, fields: { content?: string; calls?: string[]; reasoningTokens?: number }) {
  return {
    kind: 'llm_response' as const,
    step,
    content: fields.content ?? '',
    ...(fields.reasoningTokens === undefined
      ? {}
      : { reasoning: '…', reasoning_tokens: fields.reasoningTokens }),
    tool_calls: (fields.calls ?? []).map((name, i) => ({ id: `c${step}-${i}`, name, arguments: '{}' })),
    finish_reason: null,
    usage,
    latency_ms: 5,
    attempts: 1,
    backend: 'lm_studio',
  };
}

const call = (step: number, tool: string) => ({
  kind: 'tool_call' as const,
  step,
  call_id: `c${step}`,
  tool,
  arguments: '{}',
});

describe('a run’s facts from its runlog', () => {
  it('counts native and recovered calls by dialect, reasoning, and the turns lost saying nothing', () => {
    const facts = runFacts(
      log(
        {
          kind: 'run_start',
          specialist: 'rust',
          task: 't',
          model: 'qwen/qwen3-coder-30b',
          backend: 'lm_studio',
          workspace: null,
          config_digest: 'x',
          fabric_version: '0',
          max_steps: 10,
          budget_s: 60,
          window_tokens: 16384,
          profile: { matched: ['qwen3*'], settings: { temperature: 0.7 } },
        },
        // 1: a native call; 2: only thinks (lost); 3: a call written in its reasoning (recovered,
        // not lost); 4: Qwen3 XML in its content; 5: a native finish.
        response(1, { calls: ['read_file'], reasoningTokens: 30 }),
        call(1, 'read_file'),
        response(2, { reasoningTokens: 200 }),
        response(3, { reasoningTokens: 40 }),
        {
          kind: 'tool_call_recovered',
          step: 3,
          format: 'hermes',
          tool_calls: [{ id: 'r3', name: 'edit_file', arguments: '{}' }],
          from: 'reasoning',
        },
        call(3, 'edit_file'),
        response(4, { content: '<function=read_file><parameter=path>a</parameter></function>' }),
        {
          kind: 'tool_call_recovered',
          step: 4,
          format: 'qwen3_xml',
          tool_calls: [{ id: 'r4', name: 'read_file', arguments: '{}' }],
        },
        call(4, 'read_file'),
        response(5, { calls: ['finish_task'] }),
        call(5, 'finish_task'),
        {
          kind: 'run_end',
          status: 'succeeded',
          payload: null,
          error: null,
          steps: 5,
          usage,
          duration_ms: 12_345,
        },
      ),
    );
    expect(facts).toEqual({
      tools_called: ['read_file', 'edit_file', 'finish_task'],
      native_calls: 2,
      recovered_calls: { hermes: 1, qwen3_xml: 1 },
      reasoning_tokens: 270,
      empty_turns: 1,
      window_tokens: 16384,
      profile: ['qwen3*'],
      profile_settings: { temperature: 0.7 },
      seconds: 12.35,
    });
  });

  it('knows nothing of a run that never started', () => {
    expect(runFacts([])).toMatchObject({ tools_called: [], window_tokens: null, profile: [], seconds: null });
  });
});

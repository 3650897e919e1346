import { describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../../src/domain/run-events.ts';
import { timelineItems } from '../../../../src/interfaces/http/viewer/timeline.ts';

const stamp = { v: 1, ts: '2026-01-01T00:00:00.000Z', run_id: 'r' } as const;

describe("the run page's timeline", () => {
  it('makes its counts agree with their noun (issue 20: "at most 1 steps")', () => {
    const events = [
      {
        ...stamp,
        seq: 1,
        kind: 'run_start',
        specialist: 'units',
        model: 'm',
        backend: 'lm_studio',
        max_steps: 1,
        task: 'Convert 3 km',
      },
      {
        ...stamp,
        seq: 2,
        kind: 'llm_response',
        usage: { prompt_tokens: 1, completion_tokens: 0, total_tokens: 1 },
        latency_ms: 5,
        attempts: 1,
        content: '',
        tool_calls: [],
        finish_reason: 'stop',
      },
    ] as unknown as RunEvent[];
    const text = timelineItems(events).toString();
    expect(text).toContain('at most 1 step<');
    expect(text).toContain('>1 token ·');
  });

  it("folds a turn's reasoning apart from what the model said, escaped", () => {
    const events = [
      {
        ...stamp,
        seq: 2,
        kind: 'llm_response',
        usage: { prompt_tokens: 1, completion_tokens: 5, total_tokens: 6 },
        latency_ms: 5,
        attempts: 1,
        content: 'Converting.',
        reasoning: 'The <b>user</b> wants cm.',
        reasoning_tokens: 4,
        tool_calls: [],
        finish_reason: 'stop',
      },
    ] as unknown as RunEvent[];
    const text = timelineItems(events).toString();
    expect(text).toMatch(
      /<details class="reasoning"><summary>Reasoning \(4 tokens\)<\/summary><pre class="text">The &lt;b&gt;user&lt;\/b&gt; wants cm\.<\/pre><\/details>/,
    );
    expect(text).toContain('<pre class="text">Converting.</pre>');
  });

  it('shows the model profile a run used, folded', () => {
    const events = [
      {
        ...stamp,
        seq: 1,
        kind: 'run_start',
        specialist: 'units',
        model: 'qwen3:8b',
        backend: 'ollama',
        max_steps: 5,
        task: 't',
        profile: {
          matched: ['*qwen3*'],
          source: 'Qwen3 model card',
          settings: { temperature: 0.6, think: 'medium' },
          think_sent: 'medium',
        },
      },
    ] as unknown as RunEvent[];
    const text = timelineItems(events).toString();
    expect(text).toContain('<summary>Profile *qwen3* · think medium</summary>');
    expect(text).toContain('temperature: 0.6, think: medium · from Qwen3 model card');
  });
});

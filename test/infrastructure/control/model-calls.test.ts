import { describe, expect, it } from 'vitest';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';
import { backendKindOf } from '../../../src/application/ports.ts';
import { ModelCallTracker } from '../../../src/infrastructure/control/model-calls.ts';
import { lacksToolsRun, succeededRun, unavailableRun } from './fixtures.ts';

function stamp(runId: string, inputs: readonly RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({
        v: 1,
        ts: new Date(Date.UTC(2030, 0, 1, 0, 0, index)).toISOString(),
        run_id: runId,
        seq: index + 1,
        ...input,
      }) as RunEvent,
  );
}

function withRunEnd(
  inputs: RunEventInput[],
  code: string,
  status: 'failed' | 'cancelled' = 'failed',
): RunEventInput[] {
  const last = inputs.at(-1);
  if (last?.kind !== 'run_end') throw new Error('fixture must end with run_end');
  return [...inputs.slice(0, -1), { ...last, status, error: { code, message: code } }];
}

describe('backendKindOf', () => {
  it('tells the backend kind from the start of the backend string', () => {
    expect(backendKindOf('lm_studio http://127.0.0.1:1234')).toBe('lm_studio');
    expect(backendKindOf('ollama http://127.0.0.1:11434')).toBe('ollama');
    expect(backendKindOf('ollama')).toBe('ollama');
    expect(backendKindOf('llama_cpp http://127.0.0.1:8080')).toBe('llama_cpp');
    expect(backendKindOf('vllm http://gpu:8000 (model qwen)')).toBe('vllm');
    expect(backendKindOf('openai https://api.openai.com')).toBe('openai');
    expect(backendKindOf('scripted')).toBeNull();
    expect(backendKindOf(undefined)).toBeNull();
  });
});

describe('ModelCallTracker', () => {
  it('records answered calls and retried attempts, with the model of the request', () => {
    const calls = ModelCallTracker.fromEvents(stamp('r', succeededRun()));
    expect(calls.map((c) => [c.seq, c.success])).toEqual([
      [3, true],
      [7, false],
      [8, true],
      [13, true],
      [17, true],
    ]);
    expect(calls[1]).toMatchObject({
      model: 'qwen2.5-coder-7b',
      error_reason: 'HTTP 503',
      latency_ms: null,
      tool: 'lm_studio',
    });
  });

  it('records the call in flight as failed when the run ends on a backend error', () => {
    for (const code of ['backend_unavailable', 'backend_error', 'model_lacks_tools', 'context_overflow']) {
      const calls = ModelCallTracker.fromEvents(stamp('r', withRunEnd(lacksToolsRun(), code)));
      expect(calls).toMatchObject([{ seq: 3, step: 1, success: false, error_reason: code }]);
    }
  });

  it('does not blame the model for a run cancelled or failed elsewhere while a request was out', () => {
    expect(
      ModelCallTracker.fromEvents(stamp('r', withRunEnd(lacksToolsRun(), 'run_cancelled', 'cancelled'))),
    ).toEqual([]);
    expect(ModelCallTracker.fromEvents(stamp('r', withRunEnd(lacksToolsRun(), 'tool_failed')))).toEqual([]);
  });

  it('does not record a failure at run_end when the last request was answered', () => {
    const inputs = succeededRun();
    const calls = ModelCallTracker.fromEvents(stamp('r', withRunEnd(inputs, 'backend_error')));
    expect(calls).toHaveLength(5);
  });

  it('skips calls whose backend kind it cannot tell', () => {
    expect(ModelCallTracker.fromEvents(stamp('r', unavailableRun('m', 'scripted')))).toEqual([]);
  });

  it('keeps the runs it follows apart', () => {
    const tracker = new ModelCallTracker();
    const a = stamp('a', unavailableRun());
    const b = stamp('b', succeededRun());
    const calls = [];
    for (let i = 0; i < Math.max(a.length, b.length); i += 1) {
      for (const event of [a[i], b[i]]) {
        const call = event === undefined ? null : tracker.observe(event);
        if (call !== null) calls.push(call);
      }
    }
    expect(calls.filter((c) => c.run_id === 'a').map((c) => c.tool)).toEqual(['ollama', 'ollama', 'ollama']);
    expect(calls.filter((c) => c.run_id === 'b')).toHaveLength(5);
  });
});

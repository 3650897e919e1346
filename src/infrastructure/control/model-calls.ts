import type { ModelCallRecord } from '../../application/control/control-ports.ts';
import { type BackendKind, backendKindOf } from '../../application/ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';

/**
 * `run_end` error codes that mean the model call in flight failed (as opposed to a tool, the
 * budget or a cancellation). `context_overflow` is the Ollama adapter refusing a call that
 * would have been truncated: a failed call too.
 */
export const FAILED_CALL_CODES: ReadonlySet<string> = new Set([
  'backend_unavailable',
  'backend_error',
  'model_lacks_tools',
  'context_overflow',
]);

interface RunState {
  tool: BackendKind | null;
  model: string;
  /** The `llm_request` not yet answered, if any. */
  pending: { step: number; model: string } | null;
}

/**
 * Derives `control.agent_run` rows from runlog lines, in seq order. One row per answered call
 * (`llm_response`), per retried attempt (`llm_retry`), and for a run that ended on a backend
 * error while a request was unanswered. The mirror and `sync` both use it, so both derive the
 * same rows with the same keys. Lines whose backend kind cannot be told are not counted.
 */
export class ModelCallTracker {
  readonly #runs = new Map<string, RunState>();

  /** Feeds one line; returns the model call it records, if any. */
  observe(event: RunEvent): ModelCallRecord | null {
    const state = this.#state(event.run_id);
    switch (event.kind) {
      case 'run_start':
        state.tool = backendKindOf(event.backend);
        state.model = event.model;
        return null;
      case 'llm_request':
        state.pending = { step: event.step, model: event.model };
        return null;
      case 'llm_response': {
        const tool = backendKindOf(event.backend) ?? state.tool;
        const model = state.pending?.model ?? state.model;
        state.pending = null;
        if (tool === null) return null;
        // Later failures of this run are most likely on the backend that answered last.
        state.tool = tool;
        return {
          ...base(event, tool, model, event.step),
          latency_ms: Math.round(event.latency_ms),
          success: true,
          prompt_tokens: event.usage.prompt_tokens,
          completion_tokens: event.usage.completion_tokens,
          total_tokens: event.usage.total_tokens,
          reasoning_tokens: event.reasoning_tokens ?? null,
          reasoning_chars: event.reasoning === undefined ? null : event.reasoning.length,
        };
      }
      case 'llm_retry':
        if (state.tool === null) return null;
        return failure(event, state.tool, state.pending?.model ?? state.model, event.step, event.reason);
      case 'run_end': {
        this.#runs.delete(event.run_id);
        const code = event.error?.code;
        if (state.pending === null || state.tool === null || code === undefined) return null;
        if (!FAILED_CALL_CODES.has(code)) return null;
        return failure(event, state.tool, state.pending.model, state.pending.step, code);
      }
      default:
        return null;
    }
  }

  /** Derives the calls of a whole runlog. */
  static fromEvents(events: readonly RunEvent[]): ModelCallRecord[] {
    const tracker = new ModelCallTracker();
    const calls: ModelCallRecord[] = [];
    for (const event of events) {
      const call = tracker.observe(event);
      if (call !== null) calls.push(call);
    }
    return calls;
  }

  #state(runId: string): RunState {
    let state = this.#runs.get(runId);
    if (state === undefined) {
      state = { tool: null, model: '', pending: null };
      this.#runs.set(runId, state);
    }
    return state;
  }
}

function base(event: RunEvent, tool: BackendKind, model: string, step: number) {
  return { run_id: event.run_id, seq: event.seq, step, tool, model, ts: event.ts, error_reason: null };
}

function failure(
  event: RunEvent,
  tool: BackendKind,
  model: string,
  step: number,
  reason: string,
): ModelCallRecord {
  return {
    ...base(event, tool, model, step),
    latency_ms: null,
    success: false,
    error_reason: reason,
    prompt_tokens: 0,
    completion_tokens: 0,
    total_tokens: 0,
  };
}

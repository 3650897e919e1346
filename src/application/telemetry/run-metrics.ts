/**
 * Turns runs' events into the fabric's metrics (SPEC §21): one observer for every run of a
 * process, feeding a metrics port that an adapter (Prometheus) implements.
 */
import type { RunEvent } from '../../domain/run-events.ts';
import { type RunObserver, backendKindOf } from '../ports.ts';

/** What the metrics record; label values are plain strings. */
export interface RunMetrics {
  runStarted(specialist: string): void;
  runEnded(specialist: string, status: string, steps: number): void;
  tokens(model: string, kind: 'input' | 'output' | 'cached', count: number): void;
  modelLatency(model: string, provider: string, seconds: number): void;
  toolCall(tool: string, outcome: string): void;
}

/** Observes every run of a process; keeps per run only its specialist and model, until its end. */
export class RunMetricsObserver implements RunObserver {
  readonly #metrics: RunMetrics;
  readonly #runs = new Map<string, { specialist: string; model: string }>();

  constructor(metrics: RunMetrics) {
    this.#metrics = metrics;
  }

  onEvent(event: RunEvent): void {
    switch (event.kind) {
      case 'run_start':
        this.#runs.set(event.run_id, { specialist: event.specialist, model: event.model });
        this.#metrics.runStarted(event.specialist);
        break;
      case 'llm_request': {
        const run = this.#runs.get(event.run_id);
        if (run !== undefined) run.model = event.model;
        break;
      }
      case 'llm_response': {
        const model = this.#runs.get(event.run_id)?.model ?? 'unknown';
        this.#metrics.tokens(model, 'input', event.usage.prompt_tokens);
        this.#metrics.tokens(model, 'output', event.usage.completion_tokens);
        if (event.usage.cached_tokens !== undefined)
          this.#metrics.tokens(model, 'cached', event.usage.cached_tokens);
        this.#metrics.modelLatency(model, backendKindOf(event.backend) ?? 'unknown', event.latency_ms / 1000);
        break;
      }
      case 'tool_result':
        this.#metrics.toolCall(event.tool, 'ok');
        break;
      case 'tool_error':
        this.#metrics.toolCall(event.tool, event.reason);
        break;
      case 'run_end': {
        const specialist = this.#runs.get(event.run_id)?.specialist ?? 'unknown';
        this.#runs.delete(event.run_id);
        this.#metrics.runEnded(specialist, event.status, event.steps);
        break;
      }
      default:
        break;
    }
  }

  onText(): void {}

  onToolCallStarted(): void {}
}

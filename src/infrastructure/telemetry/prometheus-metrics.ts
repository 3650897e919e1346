/**
 * The fabric's metrics in Prometheus's text format (SPEC §21), with prom-client on a registry of
 * its own (never the global one an embedding application may use). prom-client is imported when
 * a server starts its metrics, never by `fabric run`.
 */
import type { RunMetrics } from '../../application/telemetry/run-metrics.ts';
import { lazy } from '../lazy-import.ts';

const loadPromClient = lazy(() => import('prom-client'));

/** Gauges read when scraped (queue depth, workers alive): a callback that answers them. */
export type GaugeSource = () => Promise<number | null>;

export interface MetricsEndpoint {
  readonly contentType: string;
  text(): Promise<string>;
}

/** Model latencies run from a fast small model's turn to a slow large one's. */
const LATENCY_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export async function createPrometheusMetrics(
  gauges: Readonly<Record<string, { help: string; read: GaugeSource }>> = {},
): Promise<RunMetrics & MetricsEndpoint> {
  const prom = await loadPromClient();
  const registry = new prom.Registry();
  const runs = new prom.Counter({
    name: 'fabric_runs_total',
    help: 'Runs ended, by status and specialist.',
    labelNames: ['status', 'specialist'],
    registers: [registry],
  });
  const inProgress = new prom.Gauge({
    name: 'fabric_runs_in_progress',
    help: 'Runs in progress in this process, by specialist.',
    labelNames: ['specialist'],
    registers: [registry],
  });
  const steps = new prom.Counter({
    name: 'fabric_steps_total',
    help: 'Loop steps of ended runs, by specialist.',
    labelNames: ['specialist'],
    registers: [registry],
  });
  const tokens = new prom.Counter({
    name: 'fabric_tokens_total',
    help: 'Tokens the model servers reported, by model and kind (input, output, cached).',
    labelNames: ['model', 'kind'],
    registers: [registry],
  });
  const latency = new prom.Histogram({
    name: 'fabric_model_request_duration_seconds',
    help: 'Time a model request took to answer, by model and provider.',
    labelNames: ['model', 'provider'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  const tools = new prom.Counter({
    name: 'fabric_tool_calls_total',
    help: 'Tool calls, by tool and outcome (ok, or the tool error reason).',
    labelNames: ['tool', 'outcome'],
    registers: [registry],
  });
  const toolErrors = new prom.Counter({
    name: 'fabric_tool_errors_total',
    help: 'Tool calls that ended in a tool error, by tool and reason.',
    labelNames: ['tool', 'reason'],
    registers: [registry],
  });
  for (const [name, gauge] of Object.entries(gauges)) {
    new prom.Gauge({
      name,
      help: gauge.help,
      registers: [registry],
      async collect() {
        const value = await gauge.read().catch(() => null);
        if (value !== null) this.set(value);
      },
    });
  }
  return {
    contentType: registry.contentType,
    text: () => registry.metrics(),
    runStarted: (specialist) => inProgress.inc({ specialist }),
    runEnded: (specialist, status, count) => {
      inProgress.dec({ specialist });
      runs.inc({ status, specialist });
      steps.inc({ specialist }, count);
    },
    tokens: (model, kind, count) => tokens.inc({ model, kind }, count),
    modelLatency: (model, provider, seconds) => latency.observe({ model, provider }, seconds),
    toolCall: (tool, outcome) => {
      tools.inc({ tool, outcome });
      if (outcome !== 'ok') toolErrors.inc({ tool, reason: outcome });
    },
  };
}

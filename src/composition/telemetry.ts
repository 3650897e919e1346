import type { ApprovalStore } from '../application/approvals/approval-store.ts';
import type { RunObserver } from '../application/ports.ts';
import type { WorkerRegistry } from '../application/queue/queue-ports.ts';
import { RunMetricsObserver } from '../application/telemetry/run-metrics.ts';
import type { SpanExporter } from '../application/telemetry/span-record.ts';
import type { FabricConfig } from '../config/load.ts';
import { tracesUrl } from '../config/telemetry.ts';
import {
  type MetricsEndpoint,
  createPrometheusMetrics,
} from '../infrastructure/telemetry/prometheus-metrics.ts';
import { OtlpSpanExporter } from '../infrastructure/telemetry/otlp-span-exporter.ts';
import { FABRIC_VERSION } from './version.ts';

/**
 * The OTLP exporter the config asks for, or null when telemetry is off. Building it loads no
 * OpenTelemetry module: the exporter imports them on its first export (SPEC §21).
 */
export function spanExporterFor(config: Pick<FabricConfig, 'telemetry'>, url?: string): SpanExporter | null {
  const target = url ?? tracesUrl(config.telemetry);
  if (target === null) return null;
  return new OtlpSpanExporter({
    url: target,
    serviceName: config.telemetry.service_name,
    serviceVersion: FABRIC_VERSION,
  });
}

/**
 * The Prometheus metrics of every run `fabric` starts from now on, for a server's `/metrics`;
 * with the queue (`queue: postgres`), the queue's depth and the workers alive too, read from the
 * control plane when scraped.
 */
export async function serveMetrics(fabric: {
  readonly config: Pick<FabricConfig, 'queue'>;
  readonly approvals: Pick<ApprovalStore, 'list'>;
  observeRuns(observer: RunObserver): void;
  runQueue(): Promise<{ readonly workers: QueueGaugeSource } | null>;
}): Promise<MetricsEndpoint> {
  const gauges = {
    ...(fabric.config.queue === 'postgres'
      ? queueGauges(async () => (await fabric.runQueue())?.workers ?? null)
      : {}),
    ...approvalGauges(fabric.approvals),
  };
  const metrics = await createPrometheusMetrics(gauges);
  fabric.observeRuns(new RunMetricsObserver(metrics));
  return metrics;
}

/**
 * A worker's metrics (`worker.metrics_port`): its runs, as a server's, plus the queue's depth and
 * the workers alive, read from the control plane when scraped.
 */
export async function workerMetrics(
  fabric: { readonly approvals: Pick<ApprovalStore, 'list'>; observeRuns(observer: RunObserver): void },
  registry: QueueGaugeSource,
): Promise<MetricsEndpoint> {
  const metrics = await createPrometheusMetrics({
    ...queueGauges(async () => registry),
    ...approvalGauges(fabric.approvals),
  });
  fabric.observeRuns(new RunMetricsObserver(metrics));
  return metrics;
}

type QueueGaugeSource = Pick<WorkerRegistry, 'queuedCount' | 'aliveCount'>;

/** Two counts, one small query each per scrape; a registry not there (yet) leaves them out. */
function queueGauges(registry: () => Promise<QueueGaugeSource | null>) {
  return {
    fabric_queue_depth: {
      help: 'Runs queued and not yet taken by a worker.',
      read: async () => (await registry())?.queuedCount() ?? null,
    },
    fabric_workers_alive: {
      help: 'Workers whose heartbeat is current (state running in control.workers).',
      read: async () => (await registry())?.aliveCount() ?? null,
    },
  };
}

/** The approvals waiting for a person in the runs directory (SPEC §19), counted when scraped. */
function approvalGauges(approvals: Pick<ApprovalStore, 'list'>) {
  return {
    fabric_approvals_pending: {
      help: "Approvals waiting for a person's answer (SPEC §19): runs parked or waiting on them.",
      read: async () => (await approvals.list({ state: 'pending' }).catch(() => null))?.length ?? null,
    },
  };
}

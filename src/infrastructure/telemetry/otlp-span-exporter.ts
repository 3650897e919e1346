/**
 * Sends spans over OTLP/HTTP (protobuf) with OpenTelemetry's own exporter. The exporter and the
 * resource are imported on the first export only: with telemetry off no OpenTelemetry module
 * is loaded (SPEC §21). The spans are built by the application with their ids derived from the
 * run, so they are handed to the exporter as finished spans, never through a tracer that would
 * draw random ids.
 */
import type { HrTime, SpanContext } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SpanExporter, SpanRecord } from '../../application/telemetry/span-record.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { lazy } from '../lazy-import.ts';

const loadOtlp = lazy(async () => {
  const [exporter, resources] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@opentelemetry/resources'),
  ]);
  return {
    OTLPTraceExporter: exporter.OTLPTraceExporter,
    resourceFromAttributes: resources.resourceFromAttributes,
  };
});

/** SpanKind and SpanStatusCode of @opentelemetry/api, whose values are part of OTLP. */
const KIND = { internal: 0, client: 2 } as const;
const STATUS = { unset: 0, ok: 1, error: 2 } as const;
/** TraceFlags.SAMPLED: every span the fabric builds is sent. */
const SAMPLED = 1;

export interface OtlpSpanExporterOptions {
  /** The traces URL (`…/v1/traces`). */
  readonly url: string;
  readonly serviceName: string;
  readonly serviceVersion: string;
  readonly timeoutMs?: number;
}

export class OtlpSpanExporter implements SpanExporter {
  readonly #options: OtlpSpanExporterOptions;

  constructor(options: OtlpSpanExporterOptions) {
    this.#options = options;
  }

  async export(spans: readonly SpanRecord[]): Promise<void> {
    if (spans.length === 0) return;
    const { OTLPTraceExporter, resourceFromAttributes } = await loadOtlp();
    const resource = resourceFromAttributes({
      'service.name': this.#options.serviceName,
      'service.version': this.#options.serviceVersion,
    });
    const scope = { name: 'agent-fabric', version: this.#options.serviceVersion };
    const readable = spans.map((span) => toReadable(span, resource, scope));
    const exporter = new OTLPTraceExporter({
      url: this.#options.url,
      timeoutMillis: this.#options.timeoutMs ?? 10_000,
    });
    try {
      const result = await new Promise<{ code: number; error?: Error }>((resolve) =>
        exporter.export(readable, resolve),
      );
      if (result.code !== 0)
        throw new FabricError(
          'telemetry_export_failed',
          `The OTLP receiver at ${this.#options.url} did not take the spans (${result.error === undefined ? 'no reason given' : errorMessage(result.error)}); check that it runs and speaks OTLP/HTTP protobuf.`,
          { cause: result.error },
        );
    } finally {
      await exporter.shutdown().catch(() => undefined);
    }
  }
}

function toReadable(
  span: SpanRecord,
  resource: ReadableSpan['resource'],
  scope: ReadableSpan['instrumentationScope'],
): ReadableSpan {
  const context: SpanContext = { traceId: span.traceId, spanId: span.spanId, traceFlags: SAMPLED };
  const parent: SpanContext | undefined =
    span.parentSpanId === undefined
      ? undefined
      : { traceId: span.traceId, spanId: span.parentSpanId, traceFlags: SAMPLED };
  const status =
    span.status.message === undefined
      ? { code: STATUS[span.status.code] }
      : { code: STATUS[span.status.code], message: span.status.message };
  return {
    name: span.name,
    kind: KIND[span.kind],
    spanContext: () => context,
    ...(parent === undefined ? {} : { parentSpanContext: parent }),
    startTime: hrTime(span.startMs),
    endTime: hrTime(span.endMs),
    duration: hrTime(Math.max(0, span.endMs - span.startMs)),
    status,
    attributes: attributesOf(span.attributes),
    links: [],
    events: span.events.map((event) => ({
      name: event.name,
      time: hrTime(event.timeMs),
      attributes: attributesOf(event.attributes),
    })),
    ended: true,
    resource,
    instrumentationScope: scope,
    droppedAttributesCount: 0,
    droppedEventsCount: 0,
    droppedLinksCount: 0,
  };
}

function attributesOf(attributes: SpanRecord['attributes']): ReadableSpan['attributes'] {
  const out: ReadableSpan['attributes'] = {};
  for (const [key, value] of Object.entries(attributes))
    out[key] = typeof value === 'object' ? [...value] : value;
  return out;
}

function hrTime(ms: number): HrTime {
  const seconds = Math.floor(ms / 1000);
  return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
}

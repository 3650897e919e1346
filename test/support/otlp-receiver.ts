/**
 * An OTLP/HTTP traces receiver for the tests: a real HTTP server that decodes each
 * `ExportTraceServiceRequest` with the official protobuf definitions (the opentelemetry-proto
 * files as compiled by OpenTelemetry JS into otlp-transformer 0.57's generated root, installed
 * under the alias otlp-proto-definitions) and keeps the spans.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
// biome-ignore lint/suspicious/noExplicitAny: protobufjs's generated static code is untyped.
const root = require('otlp-proto-definitions/build/src/generated/root.js') as any;
const REQUEST = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const RESPONSE = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceResponse;

export type ReceivedValue = string | number | boolean | string[];

/** A span as received, ids in hex, attributes flattened. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes: Record<string, ReceivedValue>;
  readonly events: { name: string; attributes: Record<string, ReceivedValue> }[];
  readonly status: { code: number; message: string };
  readonly resource: Record<string, ReceivedValue>;
}

export interface OtlpReceiver {
  /** The base URL (what OTEL_EXPORTER_OTLP_ENDPOINT takes). */
  readonly url: string;
  readonly requests: { path: string; contentType: string }[];
  readonly spans: ReceivedSpan[];
  stop(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: OtlpReceiver['requests'] = [];
  const spans: ReceivedSpan[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ path: req.url ?? '', contentType: req.headers['content-type'] ?? '' });
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      const message = REQUEST.decode(Buffer.concat(chunks));
      const decoded = REQUEST.toObject(message, { longs: String, bytes: String, oneofs: true });
      for (const resourceSpans of decoded.resourceSpans ?? []) {
        const resource = attributesOf(resourceSpans.resource?.attributes ?? []);
        for (const scopeSpans of resourceSpans.scopeSpans ?? [])
          for (const span of scopeSpans.spans ?? []) spans.push(spanOf(span, resource));
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' });
      res.end(Buffer.from(RESPONSE.encode(RESPONSE.create({})).finish()));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    spans,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// biome-ignore lint/suspicious/noExplicitAny: decoded protobuf objects.
function spanOf(span: any, resource: Record<string, ReceivedValue>): ReceivedSpan {
  return {
    traceId: hex(span.traceId),
    spanId: hex(span.spanId),
    parentSpanId: hex(span.parentSpanId ?? ''),
    name: span.name,
    kind: span.kind ?? 0,
    attributes: attributesOf(span.attributes ?? []),
    // biome-ignore lint/suspicious/noExplicitAny: decoded protobuf objects.
    events: (span.events ?? []).map((event: any) => ({
      name: event.name,
      attributes: attributesOf(event.attributes ?? []),
    })),
    status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
    resource,
  };
}

/** `bytes: String` gives base64. */
function hex(base64: string): string {
  return Buffer.from(base64, 'base64').toString('hex');
}

// biome-ignore lint/suspicious/noExplicitAny: decoded protobuf objects.
function attributesOf(list: any[]): Record<string, ReceivedValue> {
  return Object.fromEntries(list.map((kv) => [kv.key, anyValue(kv.value)]));
}

// biome-ignore lint/suspicious/noExplicitAny: decoded protobuf objects.
function anyValue(value: any): ReceivedValue {
  // `oneofs: true` names the member of AnyValue that was set.
  switch (value.value) {
    case 'arrayValue':
      return (value.arrayValue.values ?? []).map((item: unknown) => String(anyValue(item)));
    case 'intValue':
      return Number(value.intValue);
    case 'doubleValue':
      return value.doubleValue;
    case 'boolValue':
      return value.boolValue;
    default:
      return value.stringValue ?? '';
  }
}

/** An attribute value as OpenTelemetry takes it. */
export type SpanAttributeValue = string | number | boolean | readonly string[];

export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>;

/**
 * A finished span, as plain data built from a run's events (SPEC §21); the exporter adapter
 * turns it into the SDK's shape. Times are epoch milliseconds.
 */
export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: 'internal' | 'client';
  readonly startMs: number;
  readonly endMs: number;
  readonly attributes: SpanAttributes;
  readonly events: readonly {
    readonly name: string;
    readonly timeMs: number;
    readonly attributes: SpanAttributes;
  }[];
  readonly status: { readonly code: 'unset' | 'ok' | 'error'; readonly message?: string };
}

/** Sends spans to a tracing backend (OTLP). Throws when the backend refused them. */
export interface SpanExporter {
  export(spans: readonly SpanRecord[]): Promise<void>;
}

import type { SpanExporter } from '../application/telemetry/span-record.ts';
import type { FabricConfig } from '../config/load.ts';
import { tracesUrl } from '../config/telemetry.ts';
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

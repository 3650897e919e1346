import { FabricError } from '../domain/errors.ts';
import type { Environment } from './env.ts';
import type { TelemetryConfig } from './schema.ts';

/**
 * The standard OpenTelemetry variables over `telemetry:` (SPEC §21). Only the traces signal
 * and OTLP over HTTP are spoken, so only these are read.
 */
export function applyTelemetryEnvironment(config: TelemetryConfig, env: Environment): TelemetryConfig {
  const telemetry = { ...config };
  const endpoint = given(env.OTEL_EXPORTER_OTLP_ENDPOINT);
  if (endpoint !== undefined) telemetry.endpoint = checkUrl('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint);
  const traces = given(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  if (traces !== undefined)
    telemetry.traces_endpoint = checkUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces);
  const service = given(env.OTEL_SERVICE_NAME);
  if (service !== undefined) telemetry.service_name = service;
  const content = given(env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT);
  if (content !== undefined) telemetry.capture_content = content.toLowerCase() === 'true';
  return telemetry;
}

/** Where spans go, or null when telemetry is off: the traces URL wins, else `<endpoint>/v1/traces`. */
export function tracesUrl(config: TelemetryConfig): string | null {
  if (config.traces_endpoint !== undefined) return config.traces_endpoint;
  if (config.endpoint === undefined) return null;
  return `${config.endpoint.replace(/\/+$/, '')}/v1/traces`;
}

function given(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function checkUrl(name: string, value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return value;
  } catch {}
  throw new FabricError(
    'config_invalid',
    `${name}: expected an http(s) URL of an OTLP/HTTP receiver, e.g. http://localhost:4318, found "${value}".`,
  );
}

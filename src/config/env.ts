/**
 * The only place the process environment is read (SPEC §2). Works on Node and on Deno.
 */
export type Environment = Readonly<Record<string, string | undefined>>;

interface DenoLike {
  env: { toObject(): Record<string, string> };
}

/** A snapshot of the process environment, read once. */
export function readEnvironment(): Environment {
  const proc = (globalThis as { process?: { env: Record<string, string | undefined> } }).process;
  if (proc?.env) return { ...proc.env };
  const deno = (globalThis as { Deno?: DenoLike }).Deno;
  return deno ? deno.env.toObject() : {};
}

/** The environment variables the fabric reads, with what each one sets. */
export const ENVIRONMENT_VARIABLES: Readonly<Record<string, string>> = {
  LM_STUDIO_URL: 'LM Studio server URL(s), comma-separated; with or without the trailing /v1',
  OLLAMA_HOST: 'Ollama server: a URL, host:port, or 0.0.0.0 (this machine)',
  FABRIC_CONFIG: 'path of the config file (fabric.yaml or .json)',
  FABRIC_RUNS_DIR: 'where runs/<run_id>/runlog.jsonl are written (default ./runs)',
  FABRIC_CACHE_DIR:
    "where the fabric keeps what it can make again, e.g. a new embedded database's start (default ~/.cache/agent-fabric; off: nowhere)",
  FABRIC_DSN: 'Postgres connection string for the control plane',
  FABRIC_QUEUE: 'in_process (default) or postgres: queue HTTP runs for `fabric worker`s (needs FABRIC_DSN)',
  FABRIC_API_TOKEN: 'bearer token the HTTP API requires',
  SEARXNG_URL: 'SearXNG-compatible search endpoint for the research pack',
  LM_STUDIO_MODEL: 'the model `fabric daemon` asks for (--model overrides)',
  OPEN_SPEC_DAEMON_INTERVAL: 'seconds between `fabric daemon` scans (default 300)',
  OTEL_EXPORTER_OTLP_ENDPOINT: 'OTLP/HTTP base URL: turns traces on (telemetry.endpoint)',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'OTLP/HTTP traces URL, used as it is (telemetry.traces_endpoint)',
  OTEL_SERVICE_NAME: 'service.name on the spans (default agent-fabric)',
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true: put messages, arguments and results on spans',
  NO_COLOR: 'any value turns colour off',
};

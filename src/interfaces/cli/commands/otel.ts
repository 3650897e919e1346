import { resolve } from 'node:path';
import { type ExportedTrace, exportRunTrace } from '../../../application/telemetry/export-run-trace.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { spanExporterFor } from '../../../composition/telemetry.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const OTEL_HELP = `Usage: fabric otel export RUN... [--endpoint URL] [--config FILE] [--json]

Sends finished runs' traces to an OTLP/HTTP receiver (protobuf), built from their runlogs:
invoke_agent for the run, chat MODEL per model request, execute_tool TOOL per call
(docs/telemetry.md). Trace and span ids are derived from the run and its events, so exporting a
run twice sends the same spans again and a backend keeps one trace.

The receiver is --endpoint, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
OTEL_EXPORTER_OTLP_ENDPOINT (+ /v1/traces), else telemetry: in the config. Messages, tool
arguments and results are sent only with telemetry.capture_content: true (or
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true).

RUN is a run id, a unique prefix of one, or a runlog path.

Options:
  -e, --endpoint URL    the OTLP/HTTP traces URL (e.g. http://localhost:4318/v1/traces)
  -c, --config FILE     the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json            print what was sent as JSON on stdout
  -h, --help            show this help

Exit codes: 0 sent · 1 the receiver did not take them (telemetry_export_failed)
            2 usage or config error, no such run, or a run that has not ended
`;

/** `fabric otel`. */
export async function otelCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('otel', argv, {
    endpoint: { type: 'string', short: 'e' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(OTEL_HELP);
    return EXIT.ok;
  }
  const [sub, ...refs] = positionals;
  if (sub !== 'export' || refs.length === 0) {
    io.stderr.write(`fabric otel needs \`export\` and at least one RUN.\n\n${OTEL_HELP}`);
    return EXIT.usage;
  }
  if (values.endpoint !== undefined && !URL.canParse(values.endpoint))
    throw new FabricError(
      'usage',
      `--endpoint: expected a URL such as http://localhost:4318/v1/traces, found "${values.endpoint}".`,
    );
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const exporter = spanExporterFor(config, values.endpoint);
  if (exporter === null)
    throw new FabricError(
      'usage',
      'No OTLP receiver named: give --endpoint URL, or set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318), or telemetry.endpoint in the config.',
    );
  const fabric = new Fabric(config);
  const deps = { runLogs: fabric.runLogStore, exporter, captureContent: config.telemetry.capture_content };
  const sent: ExportedTrace[] = [];
  // One at a time: the first run that cannot be sent stops the command and says which.
  for (const ref of refs)
    sent.push(await exportRunTrace(deps, ref.includes('/') ? resolve(io.cwd, ref) : ref));
  if (values.json) io.stdout.write(`${JSON.stringify(sent.map(toJson))}\n`);
  else
    for (const trace of sent)
      io.stdout.write(`${trace.runId}: ${trace.spans} spans, trace ${trace.traceId}\n`);
  return EXIT.ok;
}

function toJson(trace: ExportedTrace) {
  return { run_id: trace.runId, trace_id: trace.traceId, spans: trace.spans };
}

import { FabricError } from '../../domain/errors.ts';
import type { RunLogStore } from '../ports.ts';
import { buildRunSpans } from './run-spans.ts';
import type { SpanExporter } from './span-record.ts';

export interface RunTraceDeps {
  readonly runLogs: Pick<RunLogStore, 'read'>;
  readonly exporter: SpanExporter;
  /** Messages, tool arguments and results on the spans (`telemetry.capture_content`). */
  readonly captureContent: boolean;
}

/** What one export sent. */
export interface ExportedTrace {
  readonly runId: string;
  readonly traceId: string;
  readonly spans: number;
}

/**
 * Sends a finished run's trace (SPEC §21), built from its runlog: the run's own export at its end
 * and `fabric otel export` are this one use case, so both send the same spans with the same ids.
 */
export async function exportRunTrace(deps: RunTraceDeps, ref: string): Promise<ExportedTrace> {
  const run = await deps.runLogs.read(ref);
  const spans = buildRunSpans(run.events, { captureContent: deps.captureContent });
  if (spans === null)
    throw new FabricError(
      'usage',
      `Run ${run.runId} has not ended (its runlog has no run_end): a trace is exported once the run is over. ` +
        '`fabric runs show` tells whether it is still running or was interrupted.',
    );
  await deps.exporter.export(spans);
  return { runId: run.runId, traceId: spans[0]?.traceId ?? '', spans: spans.length };
}

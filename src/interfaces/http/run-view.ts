import type { LivenessCheck } from '../../application/process-liveness.ts';
import { type RunSummary, summarizeRun } from '../../application/run-summary.ts';
import type { RunEvent, UsageFields } from '../../domain/run-events.ts';

/** Where a run's resources are, relative to the server. */
export interface RunLinks {
  readonly self: string;
  readonly events: string;
  readonly runlog: string;
  readonly cancel: string;
  readonly replay: string;
}

/** A run as the API shows it: the summary of its runlog, with the RunResult's `usage` and `runlog`. */
export interface RunView extends RunSummary {
  readonly usage: UsageFields | null;
  /** The runlog's path on the server. */
  readonly runlog: string;
  /** The runlog ends with a line cut short by a killed process. */
  readonly torn: boolean;
  /** The run is in progress in this server (it can be cancelled and followed live). */
  readonly live: boolean;
  readonly links: RunLinks;
}

/** The links of a run. */
export function runLinks(runId: string): RunLinks {
  const self = `/v1/runs/${encodeURIComponent(runId)}`;
  return {
    self,
    events: `${self}/events`,
    runlog: `${self}/runlog`,
    cancel: `${self}/cancel`,
    replay: `${self}/replay`,
  };
}

/**
 * Builds the view of a run from its events. A run without a `run_end` is `running` while it is
 * live in this server or its process still exists, and `interrupted` once that process is gone.
 */
export function runView(
  runId: string,
  events: readonly RunEvent[],
  where: { readonly runlog: string; readonly torn: boolean; readonly live: boolean },
  check: LivenessCheck,
): RunView {
  const end = events.findLast((event) => event.kind === 'run_end');
  const summary = summarizeRun(runId, events, check);
  return {
    ...summary,
    // This server runs it: running whatever its runlog records of its owner.
    ...(where.live && summary.status === 'interrupted' ? { status: 'running' as const } : {}),
    usage: end?.kind === 'run_end' ? { ...end.usage } : null,
    ...where,
    links: runLinks(runId),
  };
}

import type { RunLogContents } from '../../application/ports.ts';
import { type RunSummaryStatus, runStatusWithoutEnd } from '../../application/run-summary.ts';
import { LocalProcessLiveness } from '../../infrastructure/runlog/process-liveness.ts';

/** A run as its runlog tells it: the RunResult's fields, plus what the run was asked. */
export interface RunSummary {
  readonly run_id: string;
  /** Without a `run_end`: `running` while its process lives, `interrupted` once it is gone (SPEC §6). */
  readonly status: RunSummaryStatus;
  readonly specialist: string | null;
  readonly task: string | null;
  readonly payload: Record<string, unknown> | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly model: string | null;
  readonly backend: string | null;
  readonly steps: number;
  readonly usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly runlog: string;
  /** The last line was cut short by a killed process. */
  readonly torn: boolean;
}

const LIVENESS = new LocalProcessLiveness();

/** Summarises a runlog into a RunResult-like object. */
export function summarizeRun(contents: RunLogContents): RunSummary {
  const start = contents.events.find((event) => event.kind === 'run_start');
  const end = contents.events.findLast((event) => event.kind === 'run_end');
  const steps = contents.events.reduce(
    (most, event) => ('step' in event && typeof event.step === 'number' ? Math.max(most, event.step) : most),
    0,
  );
  return {
    run_id: contents.runId,
    status:
      end?.kind === 'run_end'
        ? end.status
        : runStatusWithoutEnd(contents.events, { liveness: LIVENESS, now: new Date() }),
    specialist: start?.kind === 'run_start' ? start.specialist : null,
    task: start?.kind === 'run_start' ? start.task : null,
    payload: end?.kind === 'run_end' ? end.payload : null,
    error: end?.kind === 'run_end' ? end.error : null,
    model: start?.kind === 'run_start' ? start.model : null,
    backend: start?.kind === 'run_start' ? start.backend : null,
    steps: end?.kind === 'run_end' ? end.steps : steps,
    usage: end?.kind === 'run_end' ? { ...end.usage } : null,
    started_at: start?.ts ?? null,
    ended_at: end?.ts ?? null,
    runlog: contents.location,
    torn: contents.torn,
  };
}

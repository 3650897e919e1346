import type { RunEvent } from '../domain/run-events.ts';
import type { RunStatus } from '../domain/run-result.ts';

/** What a listing shows of one run, read from its runlog. */
export interface RunSummary {
  readonly run_id: string;
  readonly specialist: string | null;
  readonly task: string | null;
  readonly model: string | null;
  readonly backend: string | null;
  /** `running` when the runlog has no `run_end` (still going, or killed). */
  readonly status: RunStatus | 'running';
  readonly started_at: string | null;
  readonly ended_at: string | null;
  readonly steps: number;
  readonly total_tokens: number;
  readonly payload: Record<string, unknown> | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly events: number;
}

/** Summarises a run from its events. */
export function summarizeRun(runId: string, events: readonly RunEvent[]): RunSummary {
  let start: Extract<RunEvent, { kind: 'run_start' }> | undefined;
  let end: Extract<RunEvent, { kind: 'run_end' }> | undefined;
  let steps = 0;
  for (const event of events) {
    if (event.kind === 'run_start') start = event;
    else if (event.kind === 'run_end') end = event;
    else if (event.kind === 'llm_request') steps = Math.max(steps, event.step);
  }
  return {
    run_id: runId,
    specialist: start?.specialist ?? null,
    task: start?.task ?? null,
    model: start?.model ?? null,
    backend: start?.backend ?? null,
    status: end?.status ?? 'running',
    started_at: start?.ts ?? null,
    ended_at: end?.ts ?? null,
    steps: end?.steps ?? steps,
    total_tokens: end?.usage.total_tokens ?? 0,
    payload: end?.payload ?? null,
    error: end?.error ?? null,
    events: events.length,
  };
}

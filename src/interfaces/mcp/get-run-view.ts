import type { RunRecord, RunRecordStatus } from '../../application/runs/run-record.ts';

/** What `get_run` answers: the RunResult's fields, plus what the run was asked. */
export interface McpRunSummary {
  readonly run_id: string;
  /** Without a `run_end`: `running` while its process lives, `interrupted` once it is gone (SPEC §6); `queued` until a worker takes it. */
  readonly status: RunRecordStatus;
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
  /** The runlog's path; null for a run only the control plane holds (a worker's, a queued one). */
  readonly runlog: string | null;
  /** The last line was cut short by a killed process. */
  readonly torn: boolean;
}

/** The read model's record of a run, as `get_run` shows it. */
export function mcpRunSummary(run: RunRecord): McpRunSummary {
  return {
    run_id: run.run_id,
    status: run.status,
    specialist: run.specialist,
    task: run.task,
    payload: run.payload,
    error: run.error,
    model: run.model,
    backend: run.backend,
    steps: run.steps,
    usage: run.usage,
    started_at: run.started_at,
    ended_at: run.ended_at,
    runlog: run.runlog,
    torn: run.torn,
  };
}

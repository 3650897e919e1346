/** How a run ended. */
export type RunStatus = 'succeeded' | 'failed' | 'max_steps' | 'cancelled';

/** What a run produces: the CLI's `--json` output and the HTTP API's run body. */
export interface RunResult {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly payload: Record<string, unknown> | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly model: string;
  readonly backend: string;
  readonly steps: number;
  readonly usage: {
    readonly prompt_tokens: number;
    readonly completion_tokens: number;
    readonly total_tokens: number;
  };
  readonly runlog: string;
}

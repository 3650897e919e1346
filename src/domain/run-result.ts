/**
 * How a run ended. `awaiting_approval`: parked on a call a person must approve (SPEC §19); it
 * goes on (§18) once answered. `interrupted`: its queue worker stopped it on losing its lease (cut off from
 * the database past `worker.dead_after_s`), the status the control plane already gives it.
 */
export type RunStatus =
  | 'succeeded'
  | 'failed'
  | 'max_steps'
  | 'cancelled'
  | 'interrupted'
  | 'awaiting_approval';

const INTERRUPTION = 'RunInterruption';

/**
 * The abort reason that makes a run end `interrupted` rather than `cancelled`: a queue worker
 * that lost its lease on the run (issue 26).
 */
export function runInterruption(message: string): Error {
  const error = new Error(message);
  error.name = INTERRUPTION;
  return error;
}

/** True for an abort reason made by `runInterruption`. */
export function isRunInterruption(reason: unknown): reason is Error {
  return reason instanceof Error && reason.name === INTERRUPTION;
}

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
  /** A parked run (`awaiting_approval`): the approval it waits for. */
  readonly approval?: {
    readonly id: string;
    readonly tool: string;
    readonly argv?: readonly string[];
    readonly path?: string;
  };
}

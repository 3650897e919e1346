/**
 * The daemon's ports besides OpenSpec and git: the run that implements a task, the validation
 * after it, and where the daemon keeps its state. Nothing here does I/O.
 */
import type { RunResult } from '../../domain/run-result.ts';
import type { DaemonState, DaemonTaskRecord } from './daemon-state.ts';

/** What starting a task's run came to. */
export type TaskRunResult =
  | { readonly kind: 'ran'; readonly result: RunResult }
  /** No model reachable (connection refused, no backend has a usable model): no attempt is spent. */
  | { readonly kind: 'backend_down'; readonly message: string }
  | { readonly kind: 'cancelled' };

/** What resuming an interrupted attempt's run came to: as a run, or why it cannot go on. */
export type TaskResumeResult = TaskRunResult | { readonly kind: 'not_resumable'; readonly reason: string };

/** Starts a specialist run in the repository (the rust specialist by default). */
export interface TaskRunner {
  /**
   * `model`: the model to ask for; undefined: the runner's own (the specialist's). `runId`: the
   * run's id, chosen by the daemon so that it is in the state before the run starts.
   */
  run(task: string, signal: AbortSignal, model?: string, runId?: string): Promise<TaskRunResult>;
  /**
   * Goes on with a run a killed daemon left (SPEC §18), under the same id; a runner without it
   * cannot resume, and the daemon starts the attempt again as before.
   */
  resume?(runId: string, signal: AbortSignal): Promise<TaskResumeResult>;
  /**
   * Where a run parked on an approval stands (SPEC §19); a runner without it cannot park runs,
   * and the daemon refuses a call that needs approval at once instead.
   */
  parked?(runId: string): Promise<ParkedRunState>;
  /** Ends a parked run `cancelled` (its task went away, or its edits no longer apply). */
  cancelParked?(runId: string): Promise<void>;
}

/** Where a parked run stands: waiting for a person, answered (it may go on), or ended elsewhere. */
export type ParkedRunState =
  | {
      readonly kind: 'waiting';
      /** The approval it waits for, and the call as a person sees it (`cargo tree`, `write_file Cargo.lock`). */
      readonly approval: { readonly id: string; readonly call: string };
    }
  | { readonly kind: 'answered' }
  /** No longer parked: cancelled (`fabric cancel`, HTTP), or gone on with by hand (`--force`). */
  | { readonly kind: 'ended'; readonly status: string };

/** The outcome of the validation commands. */
export interface ValidationReport {
  readonly ok: boolean;
  /** Each command with its exit and (bounded) output: the next attempt's feedback when not ok. */
  readonly report: string;
  /**
   * What failed, for a person: the failing command and, for `cargo test`, each failing test with
   * where it panicked and its message, and the result line; the output's last lines otherwise.
   * Empty when ok.
   */
  readonly summary: string;
  /** Tests that passed, summed over `cargo test`'s result lines; null when no tests ran. */
  readonly testsPassed: number | null;
  /**
   * The tests that failed, by name, when test failures are all that failed; null when something
   * else failed (a build error, a command not run): then no baseline can excuse the failure.
   * Empty when ok.
   */
  readonly failedTests: readonly string[] | null;
}

/** Runs the configured validation commands (default `cargo build`, `cargo test`) in the sandbox. */
export interface Validator {
  validate(signal: AbortSignal): Promise<ValidationReport>;
}

/** Clippy's warnings on the tree as it is, or why there is no figure (not allowed, failed to run). */
export type ClippyCount =
  | { readonly warnings: number }
  | { readonly warnings: null; readonly reason: string };

/**
 * Counts `cargo clippy` warnings through the validation's sandbox, where the specialist's
 * allowlist allows clippy (SPEC §11's code-quality figures). A clippy that cannot run is a null
 * count with its reason, never an error: it must not fail a task.
 */
export interface ClippyCounter {
  countClippy(signal: AbortSignal): Promise<ClippyCount>;
}

/** What a command of OpenSpec's CLI came to: whether it passed, and what it said. */
export interface OpenSpecCliResult {
  readonly ok: boolean;
  readonly output: string;
}

/** OpenSpec's own CLI (`openspec` on the PATH), for a change whose tasks are all done (SPEC §11.1). */
export interface OpenSpecCli {
  /** `openspec validate <id> --strict`. */
  validate(changeId: string, signal: AbortSignal): Promise<OpenSpecCliResult>;
  /** `openspec archive <id> --yes`: the change moves under archive/ and its spec deltas apply. */
  archive(changeId: string, signal: AbortSignal): Promise<OpenSpecCliResult>;
}

/** Where the daemon's state lives outside the repository (a file under the runs directory). */
export interface DaemonStateStore {
  /** The saved state, or null before the first daemon ran on this repository. */
  load(): Promise<DaemonState | null>;
  save(state: DaemonState): Promise<void>;
}

/** The control plane's `control.daemon_tasks`, written best-effort (a database that is off never stops the daemon). */
export interface DaemonTaskSink {
  recordDaemonTask(repo: string, task: DaemonTaskRecord): Promise<void>;
}

/** Whether a control store also keeps the daemon's tasks (an optional capability of the store). */
export function isDaemonTaskSink(store: unknown): store is DaemonTaskSink {
  return typeof (store as Partial<DaemonTaskSink> | null)?.recordDaemonTask === 'function';
}

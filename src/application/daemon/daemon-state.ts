/** The daemon's own record of its work (SPEC §11): kept outside the repository, read by `daemon status`. */

/** A task's status as status and `--json` show it. */
export type DaemonTaskStatus = 'done' | 'pending' | 'blocked' | 'running' | 'awaiting_approval';

/**
 * A task whose run is parked on an approval (SPEC §19): its edits are set aside under `ref` and
 * the tree is clean, so the daemon goes on with other changes; answered, they are brought back
 * and the run goes on.
 */
export interface ParkedTask {
  readonly run_id: string;
  readonly approval_id: string;
  /** The call as a person sees it: `cargo tree -e features`, `write_file Cargo.lock`. */
  readonly call: string;
  /** Where the run's edits are kept (`refs/fabric/parked/<run>`). */
  readonly ref: string;
  readonly since: string;
}

/** What the daemon knows of one task it worked on. */
export interface DaemonTaskRecord {
  readonly change: string;
  readonly id: string;
  readonly text: string;
  status: DaemonTaskStatus;
  attempts: number;
  run_ids: string[];
  /**
   * The run of the attempt under way, recorded before it starts (SPEC §18): a daemon killed
   * mid-attempt resumes it when started again instead of spending another attempt.
   */
  run_in_flight?: string | null;
  /** The model of each attempt's run, in order (escalation: SPEC §11.1). */
  models?: string[];
  /** Set while the task's run is parked on an approval (`awaiting_approval`). */
  parked?: ParkedTask | null;
  commit: string | null;
  /** The last failure (compiler, tests, run error, commit hook) when blocked or retrying. */
  diagnostics: string | null;
  started_at: string | null;
  ended_at: string | null;
  seconds: number | null;
  tokens: number;
  files_changed: number | null;
  lines_added: number | null;
  lines_removed: number | null;
  tests_passed: number | null;
  /** Clippy warnings on the last commit before the first attempt; null when not counted. */
  clippy_before: number | null;
  /** Clippy warnings after the validated attempt; null when not counted. */
  clippy_after: number | null;
  /** Why a clippy figure is null (clippy not allowed, or it failed to run). */
  clippy_note: string | null;
  /** Tests that failed at HEAD before the change's first task and fail with the task too: not its doing. */
  preexisting_failures?: string[];
  /** Tests that failed and then passed when the validation ran again: flaky, not blocking. */
  flaky_tests?: string[];
}

/** Backend connection health as the daemon saw it. */
export interface BackendHealth {
  state: 'up' | 'down' | 'unknown';
  last_ok: string | null;
  failures: number;
  backoff_s: number;
  last_error: string | null;
}

/** The whole state file. */
export interface DaemonState {
  readonly version: 1;
  readonly repo: string;
  /** The daemon that wrote it last; a `running` task of a daemon that is gone is shown `pending`. */
  pid: number | null;
  host: string | null;
  updated_at: string;
  tasks: DaemonTaskRecord[];
  backend: BackendHealth;
}

/** A state for a repository no daemon has worked on yet. */
export function emptyState(repo: string, now: Date): DaemonState {
  return {
    version: 1,
    repo,
    pid: null,
    host: null,
    updated_at: now.toISOString(),
    tasks: [],
    backend: { state: 'unknown', last_ok: null, failures: 0, backoff_s: 0, last_error: null },
  };
}

/** The record of a task, made when the daemon first takes it up (or takes it up again). */
export function freshRecord(change: string, id: string, text: string): DaemonTaskRecord {
  return {
    change,
    id,
    text,
    status: 'pending',
    attempts: 0,
    run_ids: [],
    commit: null,
    diagnostics: null,
    started_at: null,
    ended_at: null,
    seconds: null,
    tokens: 0,
    files_changed: null,
    lines_added: null,
    lines_removed: null,
    tests_passed: null,
    clippy_before: null,
    clippy_after: null,
    clippy_note: null,
  };
}

/**
 * Puts the record last in the state, replacing an older one of the same task: the last record is
 * the one the control plane is sent when the state is saved.
 */
export function putLast(state: DaemonState, record: DaemonTaskRecord): DaemonTaskRecord {
  const others = state.tasks.filter((t) => !(t.change === record.change && t.id === record.id));
  state.tasks = [...others, record];
  return record;
}

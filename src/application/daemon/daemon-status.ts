import type { BackendHealth, DaemonState, DaemonTaskRecord, DaemonTaskStatus } from './daemon-state.ts';
import type { OpenSpecScan, OpenSpecTask } from './openspec.ts';

/** A task as `daemon status --json`, `GET /v1/daemon` and the daemon's `--json` events show it (SPEC §11). */
export interface DaemonTaskView {
  readonly change: string;
  readonly id: string;
  readonly text: string;
  readonly status: DaemonTaskStatus;
  readonly attempts: number;
  readonly run_ids: readonly string[];
  readonly commit: string | null;
  /** While `awaiting_approval`: the approval its run waits for, and the call. */
  readonly approval?: { readonly id: string; readonly call: string; readonly run_id: string };
}

/** Code-quality and cost figures of a task the daemon finished or blocked. */
export interface DaemonTaskFigures {
  readonly change: string;
  readonly id: string;
  readonly status: DaemonTaskStatus;
  readonly seconds: number | null;
  readonly tokens: number;
  readonly files_changed: number | null;
  readonly lines_added: number | null;
  readonly lines_removed: number | null;
  readonly tests_passed: number | null;
  /** Clippy warnings on the last commit before the task and after its validated attempt. */
  readonly clippy_before: number | null;
  readonly clippy_after: number | null;
  /** Why a clippy figure is null (clippy not allowed, or it failed to run). */
  readonly clippy_note: string | null;
  readonly diagnostics: string | null;
  /** Tests failing at HEAD before the change's first task that failed with the task too. */
  readonly preexisting_failures: readonly string[];
  /** Tests that failed and then passed when the validation ran again. */
  readonly flaky_tests: readonly string[];
}

/** One model's record over the attempts it was given. */
export interface ModelFigures {
  readonly model: string;
  readonly attempts: number;
  /** Tasks whose validated attempt was this model's. */
  readonly succeeded: number;
  readonly success_rate: number | null;
}

/** The shape of SPEC §11, with the per-task figures and unreadable changes beside it. */
export interface DaemonStatus {
  readonly repo: string;
  readonly daemon: {
    readonly running: boolean;
    readonly pid: number | null;
    readonly updated_at: string | null;
  };
  readonly changes: readonly {
    readonly id: string;
    readonly done: number;
    readonly pending: number;
    readonly blocked: number;
    readonly awaiting_approval: number;
    readonly tasks: readonly DaemonTaskView[];
    /** Why the change could not be read (file and line); its tasks are then unknown. */
    readonly error?: string;
  }[];
  readonly stats: {
    readonly attempts: number;
    readonly succeeded: number;
    readonly first_attempt_success_rate: number | null;
    readonly success_rate: number | null;
    readonly seconds_per_task: number | null;
    readonly tokens_per_task: number | null;
    /** Per model (escalation, SPEC §11.1): its attempts, the tasks it finished, their ratio. */
    readonly models: readonly ModelFigures[];
    readonly tasks: readonly DaemonTaskFigures[];
  };
  readonly backend: Omit<BackendHealth, 'last_error'> & { readonly last_error: string | null };
}

/** The view of one task: its box says done; otherwise what the daemon recorded for this text. */
export function taskView(
  change: string,
  task: OpenSpecTask,
  record: DaemonTaskRecord | undefined,
  daemonRunning: boolean,
): DaemonTaskView {
  const own = record !== undefined && record.text === task.text ? record : undefined;
  let status: DaemonTaskStatus = task.done ? 'done' : (own?.status ?? 'pending');
  // A box unticked by hand is pending again; a run whose daemon is gone is not running.
  if (!task.done && status === 'done') status = 'pending';
  if (status === 'running' && !daemonRunning) status = 'pending';
  return {
    change,
    id: task.id,
    text: task.text,
    status,
    attempts: own?.attempts ?? 0,
    run_ids: own?.run_ids ?? [],
    commit: own?.commit ?? null,
    ...approvalOf(status === 'awaiting_approval' ? own : undefined),
  };
}

/** The approval a parked task's run waits for, as the views show it. */
function approvalOf(record: DaemonTaskRecord | undefined): Pick<DaemonTaskView, 'approval'> {
  const parked = record?.parked;
  if (parked === undefined || parked === null) return {};
  return { approval: { id: parked.approval_id, call: parked.call, run_id: parked.run_id } };
}

/** The view of a task the daemon is working on, from its record (the daemon's events). */
export function recordView(record: DaemonTaskRecord): DaemonTaskView {
  return {
    change: record.change,
    id: record.id,
    text: record.text,
    status: record.status,
    attempts: record.attempts,
    run_ids: [...record.run_ids],
    commit: record.commit,
    ...approvalOf(record.status === 'awaiting_approval' ? record : undefined),
  };
}

/** Finds a task's record in the state. */
export function findRecord(
  state: DaemonState | null,
  change: string,
  id: string,
): DaemonTaskRecord | undefined {
  return state?.tasks.find((task) => task.change === change && task.id === id);
}

/** Builds the status from the repository's checklists and the daemon's saved state. */
export function buildStatus(
  repo: string,
  scan: OpenSpecScan,
  state: DaemonState | null,
  daemonRunning: boolean,
): DaemonStatus {
  const changes = [
    ...scan.changes.map((change) => {
      const tasks = change.tasks.map((task) =>
        taskView(change.id, task, findRecord(state, change.id, task.id), daemonRunning),
      );
      const count = (status: DaemonTaskStatus) => tasks.filter((task) => task.status === status).length;
      return {
        id: change.id,
        done: count('done'),
        pending: count('pending') + count('running'),
        blocked: count('blocked'),
        awaiting_approval: count('awaiting_approval'),
        tasks,
      };
    }),
    ...scan.unreadable.map((u) => ({
      id: u.id,
      done: 0,
      pending: 0,
      blocked: 0,
      awaiting_approval: 0,
      tasks: [],
      error: u.message,
    })),
  ].sort((a, b) => a.id.localeCompare(b.id));
  const worked = (state?.tasks ?? []).filter((task) => task.attempts > 0);
  const attempts = worked.reduce((sum, task) => sum + task.attempts, 0);
  const finished = worked.filter((task) => task.status === 'done' || task.status === 'blocked');
  const succeeded = finished.filter((task) => task.status === 'done');
  const firstTime = succeeded.filter((task) => task.attempts === 1).length;
  const timed = succeeded.filter((task) => task.seconds !== null);
  const backend = state?.backend ?? {
    state: 'unknown',
    last_ok: null,
    failures: 0,
    backoff_s: 0,
    last_error: null,
  };
  return {
    repo,
    daemon: { running: daemonRunning, pid: state?.pid ?? null, updated_at: state?.updated_at ?? null },
    changes,
    stats: {
      attempts,
      succeeded: succeeded.length,
      first_attempt_success_rate: ratio(firstTime, finished.length),
      success_rate: ratio(succeeded.length, attempts),
      seconds_per_task: mean(timed.map((task) => task.seconds ?? 0)),
      tokens_per_task: mean(succeeded.map((task) => task.tokens)),
      models: modelFigures(worked),
      tasks: worked.map((task) => ({
        change: task.change,
        id: task.id,
        status: task.status,
        seconds: task.seconds,
        tokens: task.tokens,
        files_changed: task.files_changed,
        lines_added: task.lines_added,
        lines_removed: task.lines_removed,
        tests_passed: task.tests_passed,
        // State files written before clippy was counted lack the fields.
        clippy_before: task.clippy_before ?? null,
        clippy_after: task.clippy_after ?? null,
        clippy_note: task.clippy_note ?? null,
        diagnostics: task.diagnostics,
        preexisting_failures: task.preexisting_failures ?? [],
        flaky_tests: task.flaky_tests ?? [],
      })),
    },
    backend: { ...backend },
  };
}

/** Each model's attempts and successes, in the order the models were first used. */
function modelFigures(tasks: readonly DaemonTaskRecord[]): ModelFigures[] {
  const byModel = new Map<string, { attempts: number; succeeded: number }>();
  for (const task of tasks) {
    const models = task.models ?? [];
    for (const model of models) {
      const figures = byModel.get(model) ?? { attempts: 0, succeeded: 0 };
      figures.attempts += 1;
      byModel.set(model, figures);
    }
    const last = models.at(-1);
    if (task.status === 'done' && last !== undefined) byModel.get(last)!.succeeded += 1;
  }
  return [...byModel].map(([model, { attempts, succeeded }]) => ({
    model,
    attempts,
    succeeded,
    success_rate: ratio(succeeded, attempts),
  }));
}

function ratio(part: number, whole: number): number | null {
  return whole === 0 ? null : Math.round((part / whole) * 1000) / 1000;
}

function mean(values: readonly number[]): number | null {
  return values.length === 0
    ? null
    : Math.round((values.reduce((a, b) => a + b, 0) / values.length) * 10) / 10;
}

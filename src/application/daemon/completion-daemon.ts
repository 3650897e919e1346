import { errorMessage } from '../../domain/errors.ts';
import type { AutoEscalation } from '../models/auto-escalation.ts';
import type { Clock } from '../ports.ts';
import type {
  ClippyCounter,
  DaemonStateStore,
  OpenSpecCli,
  DaemonTaskSink,
  TaskRunner,
  Validator,
} from './daemon-ports.ts';
import type { DaemonEvent, StampedDaemonEvent } from './daemon-events.ts';
import { type DaemonState, emptyState } from './daemon-state.ts';
import { findRecord, recordView, taskView } from './daemon-status.ts';
import { type OpenSpecSource, workOrder } from './openspec.ts';
import type { Repository } from './repository.ts';
import { idleUntilAnswered, isWaiting, noLongerToDo, restoreSetAside, settleParked } from './parked-task.ts';
import { type TaskWorkContext, workTask } from './task-work.ts';

/** Everything the daemon works through (ports only: SPEC §2). */
export interface CompletionDaemonDeps {
  readonly repo: string;
  readonly openspec: OpenSpecSource;
  readonly git: Repository;
  readonly runner: TaskRunner;
  readonly validator: Validator;
  readonly state: DaemonStateStore;
  readonly sink?: DaemonTaskSink | undefined;
  /** OpenSpec's CLI when `openspec` is on the PATH: a finished change is validated (and archived). */
  readonly openspecCli?: OpenSpecCli | undefined;
  /** Clippy's warnings before and after each task; none: no clippy figures. */
  readonly clippy?: ClippyCounter | undefined;
  readonly clock: Clock;
  readonly owner: { readonly pid: number; readonly host: string };
  readonly onEvent: (event: StampedDaemonEvent) => void;
}

/** How the daemon runs: `fabric daemon`'s flags and config. */
export interface CompletionDaemonOptions {
  /** Only these changes (`--change`); empty: every change. */
  readonly changes: readonly string[];
  readonly once: boolean;
  readonly intervalMs: number;
  readonly maxAttempts: number;
  /** Try blocked tasks again (`--retry-blocked`) in the first pass. */
  readonly retryBlocked: boolean;
  /** First wait when the backend is down; it doubles, capped at the interval. Default 1 s. */
  readonly backoffBaseMs?: number;
  /**
   * With `once`: how long a model may stay out of reach before the daemon gives up with
   * `backend_unavailable` (exit 4) instead of waiting for ever. Default 300 s.
   */
  readonly backendWaitMs?: number;
  /**
   * The models to escalate through, cheapest first, each given `maxAttempts` (SPEC §11.1);
   * default one: the runner's own.
   */
  readonly models?: readonly string[];
  /** \`daemon.models: auto\`: how \`models\` was measured into its order (reported after daemon_start). */
  readonly escalation?: AutoEscalation | undefined;
  /** Times a failing validation runs again before an attempt is spent (flaky tests). Default 1. */
  readonly validationReruns?: number;
  /** Archive a change whose last task is done and that `openspec validate --strict` accepts (`--archive`). */
  readonly archive?: boolean;
  /** Run the validation at HEAD before a change's first task (its failing tests are pre-existing). Default true. */
  readonly baseline?: boolean;
}

/** A task's attempt a killed daemon left, and its run. */
interface Interrupted {
  readonly change: string;
  readonly id: string;
  readonly runId: string;
}

/**
 * How a daemon ended: cancelled (SIGINT/SIGTERM) or after `--once`, how many tasks are blocked,
 * and how many wait for an approval (their runs parked, SPEC §19).
 */
export interface DaemonOutcome {
  readonly cancelled: boolean;
  readonly blocked: number;
  readonly awaitingApproval: number;
}

/**
 * The OpenSpec completion daemon (SPEC §11): takes the unchecked tasks in document order, runs
 * the specialist on each, validates, ticks and commits one task at a time; retries with the
 * failure as feedback, blocks after `maxAttempts` (tree restored, that change stops), and waits
 * out backend outages without spending attempts.
 */
export class CompletionDaemon {
  readonly #deps: CompletionDaemonDeps;
  readonly #options: CompletionDaemonOptions;
  #state: DaemonState;
  #retryBlocked: boolean;
  /** The attempt a killed daemon left, to resume when its task comes up (SPEC §18). */
  #interrupted: Interrupted | null = null;
  /** Why the attempt a killed daemon left is not resumed, said after daemon_start. */
  #refused: DaemonEvent | null = null;
  /** The tests failing at each HEAD the baseline ran at. */
  readonly #baselines = new Map<string, ReadonlySet<string>>();
  /** When the current outage began (ms), across tasks; null while a model answers. */
  readonly #outage: { since: number | null } = { since: null };

  constructor(deps: CompletionDaemonDeps, options: CompletionDaemonOptions) {
    this.#deps = deps;
    this.#options = options;
    this.#state = emptyState(deps.repo, deps.clock.now());
    this.#retryBlocked = options.retryBlocked;
  }

  /** Runs until cancelled, or through one pass with `once`. Refuses a repository it must not touch. */
  async run(signal: AbortSignal): Promise<DaemonOutcome> {
    const { git } = this.#deps;
    const release = await git.lock();
    // A refused start (dirty tree, detached HEAD, a state it cannot read) changes no state: the
    // state is read first and written only once the repository is known to be fit to work in.
    let started = false;
    try {
      this.#state = (await this.#deps.state.load()) ?? this.#state;
      // Killed as it parked a run: the tree still holds exactly what was set aside.
      await restoreSetAside(this.#state, git);
      const interrupted = await this.#findInterrupted();
      // The tree as the killed attempt left it is its work, and the resumed run goes on with it.
      await git.ensureReady({ dirtyOk: interrupted !== null });
      this.#interrupted = interrupted;
      started = true;
      this.#state.pid = this.#deps.owner.pid;
      this.#state.host = this.#deps.owner.host;
      await this.#save();
      this.#emit({
        event: 'daemon_start',
        repo: this.#deps.repo,
        changes: this.#options.changes,
        max_attempts: this.#options.maxAttempts,
        models: this.#options.models ?? [],
        interval_s: Math.round(this.#options.intervalMs / 1000),
        once: this.#options.once,
      });
      const escalation = this.#options.escalation;
      if (escalation !== undefined)
        this.#emit({ event: 'escalation', models: escalation.steps, left_out: escalation.leftOut });
      if (this.#refused !== null) this.#emit(this.#refused);
      for (;;) {
        const outcome = await this.#pass(signal);
        this.#retryBlocked = false;
        if (outcome === 'cancelled' || signal.aborted) return this.#stop('cancelled');
        if (this.#options.once) return this.#stop('once');
        this.#emit({ event: 'idle', next_scan_s: Math.round(this.#options.intervalMs / 1000) });
        // An approval answered meanwhile ends the wait within a second: its run goes on.
        await idleUntilAnswered(
          this.#taskContext(),
          this.#state,
          (id) => this.#wanted(id),
          this.#options.intervalMs,
          signal,
        );
        if (signal.aborted) return this.#stop('cancelled');
      }
    } finally {
      if (started) {
        this.#state.pid = null;
        await this.#save().catch(() => {});
      }
      await release();
    }
  }

  /** A change the daemon works on (`--change`, or every one). */
  #wanted(change: string): boolean {
    return this.#options.changes.length === 0 || this.#options.changes.includes(change);
  }

  #stop(reason: 'once' | 'cancelled'): DaemonOutcome {
    const count = (status: string) => this.#state.tasks.filter((task) => task.status === status).length;
    const blocked = count('blocked');
    const awaitingApproval = count('awaiting_approval');
    this.#emit({ event: 'daemon_stop', reason, blocked, awaiting_approval: awaitingApproval });
    return { cancelled: reason === 'cancelled', blocked, awaitingApproval };
  }

  /** One scan: every change in name order, each change's tasks in document order, sub-tasks first. */
  async #pass(signal: AbortSignal): Promise<'idle' | 'cancelled'> {
    const scan = await this.#deps.openspec.scan();
    const wanted = (id: string) => this.#wanted(id);
    await settleParked(this.#taskContext(), this.#state, scan, wanted);
    for (const problem of scan.unreadable) {
      if (wanted(problem.id))
        this.#emit({ event: 'change_unreadable', change: problem.id, message: problem.message });
    }
    for (const change of scan.changes.filter((c) => wanted(c.id))) {
      const done = change.tasks.filter((task) => task.done);
      let baseline: ReadonlySet<string> | null = null;
      let stopped = false;
      let finished = 0;
      for (const task of workOrder(change.tasks)) {
        if (task.done) continue;
        const record = findRecord(this.#state, change.id, task.id);
        if (record?.status === 'blocked' && record.text === task.text && !this.#retryBlocked) {
          this.#emit({ event: 'change_stopped', change: change.id, task: task.id, reason: 'blocked' });
          stopped = true;
          break;
        }
        const parked = record?.status === 'awaiting_approval' && record.text === task.text;
        if (parked && (await isWaiting(this.#taskContext(), record))) {
          this.#emit({
            event: 'change_stopped',
            change: change.id,
            task: task.id,
            reason: 'awaiting_approval',
          });
          stopped = true;
          break;
        }
        const resume = this.#takeInterrupted(change.id, task.id);
        // The baseline needs the tree at HEAD: a resumed attempt is judged without one.
        if (resume === undefined) baseline ??= await this.#baseline(change.id, signal);
        const judged = resume === undefined ? (baseline ?? new Set<string>()) : new Set<string>();
        if (signal.aborted) return 'cancelled';
        const outcome = await workTask(
          this.#taskContext(),
          { change, task, done, baseline: judged, resume, parked },
          signal,
        );
        if (outcome === 'cancelled') return 'cancelled';
        // Blocked (tree restored), or parked (its edits set aside): the other changes go on.
        if (outcome === 'blocked' || outcome === 'parked') {
          const reason = outcome === 'parked' ? 'awaiting_approval' : 'blocked';
          this.#emit({ event: 'change_stopped', change: change.id, task: task.id, reason });
          stopped = true;
          break;
        }
        done.push({ ...task, done: true });
        finished += 1;
      }
      // Its last task done in this pass: OpenSpec's own checks, and the archive when asked.
      if (!stopped && finished > 0 && (await this.#finishChange(change.id, signal)) === 'cancelled')
        return 'cancelled';
    }
    const counts = { done: 0, pending: 0, blocked: 0, awaiting_approval: 0 };
    for (const change of (await this.#deps.openspec.scan()).changes.filter((c) => wanted(c.id))) {
      for (const task of change.tasks) {
        const view = taskView(change.id, task, findRecord(this.#state, change.id, task.id), true);
        if (view.status === 'done') counts.done += 1;
        else if (view.status === 'blocked') counts.blocked += 1;
        else if (view.status === 'awaiting_approval') counts.awaiting_approval += 1;
        else counts.pending += 1;
      }
    }
    this.#emit({ event: 'pass_end', ...counts });
    return 'idle';
  }

  /**
   * The attempt a killed daemon left (its task `running`, its run's id saved), when its task is
   * still to do as it was; otherwise null, and why it is not resumed is said.
   */
  async #findInterrupted(): Promise<Interrupted | null> {
    const record = this.#state.tasks.find(
      (t) => t.status === 'running' && typeof t.run_in_flight === 'string',
    );
    const runId = record?.run_in_flight;
    if (record === undefined || runId === undefined || runId === null) return null;
    const why =
      noLongerToDo(await this.#deps.openspec.scan(), record) ??
      (this.#wanted(record.change) ? null : 'its change is not among --change');
    if (why === null) return { change: record.change, id: record.id, runId };
    record.run_in_flight = null;
    this.#refused = { event: 'resume_refused', task: recordView(record), run_id: runId, reason: why };
    return null;
  }

  /** The interrupted run to resume when this task comes up (once). */
  #takeInterrupted(change: string, id: string): string | undefined {
    const interrupted = this.#interrupted;
    if (interrupted === null || interrupted.change !== change || interrupted.id !== id) return undefined;
    this.#interrupted = null;
    return interrupted.runId;
  }

  /**
   * A change whose last task is done: `openspec validate --strict` (reported), then with
   * `--archive` `openspec archive` in a commit of its own; an archive that fails is undone.
   */
  async #finishChange(change: string, signal: AbortSignal): Promise<'done' | 'cancelled'> {
    const cli = this.#deps.openspecCli;
    if (cli === undefined) return 'done';
    const validated = await cli.validate(change, signal);
    if (signal.aborted) return 'cancelled';
    this.#emit({ event: 'change_validated', change, ...validated });
    if (!validated.ok || this.#options.archive !== true) return 'done';
    const archived = await cli.archive(change, signal);
    let commit: string | null = null;
    let output = archived.output;
    try {
      if (archived.ok) {
        commit = (
          await this.#deps.git.commit(`${change}: archive the change\n\nopenspec archive ${change}\n`)
        ).commit;
      }
    } catch (error) {
      output = `${output}\n${errorMessage(error)}`.trim();
    }
    if (commit === null) await this.#deps.git.restore();
    this.#emit({ event: 'change_archived', change, ok: commit !== null, commit, output });
    return signal.aborted ? 'cancelled' : 'done';
  }

  /**
   * The validation at HEAD before a change's first task (SPEC §11.1): the tests failing there
   * are pre-existing, reported and never blamed on a task. Run once per commit.
   */
  async #baseline(change: string, signal: AbortSignal): Promise<ReadonlySet<string>> {
    if (this.#options.baseline === false) return new Set();
    const commit = await this.#deps.git.head();
    let failed = this.#baselines.get(commit);
    const report = failed === undefined ? await this.#deps.validator.validate(signal) : null;
    if (signal.aborted) return new Set();
    if (report !== null) {
      failed = new Set(report.ok ? [] : (report.failedTests ?? []));
      this.#baselines.set(commit, failed);
      this.#emit({
        event: 'baseline',
        change,
        commit,
        ok: report.ok,
        failed_tests: report.ok ? [] : report.failedTests,
        summary: report.ok ? null : report.summary,
      });
    }
    return failed ?? new Set();
  }

  /** What the work on a task reaches: the ports, the settings, the state as it is now. */
  #taskContext(): TaskWorkContext {
    const deps = this.#deps;
    return {
      runner: deps.runner,
      validator: deps.validator,
      clippy: deps.clippy,
      openspec: deps.openspec,
      git: deps.git,
      clock: deps.clock,
      state: this.#state,
      maxAttempts: this.#options.maxAttempts,
      models:
        this.#options.models === undefined || this.#options.models.length === 0
          ? [undefined]
          : this.#options.models,
      reruns: this.#options.validationReruns ?? 1,
      backoff: { baseMs: this.#options.backoffBaseMs ?? 1000, capMs: this.#options.intervalMs },
      backendWaitMs: this.#options.once ? (this.#options.backendWaitMs ?? 300_000) : undefined,
      outage: this.#outage,
      save: () => this.#save(),
      emit: (event) => this.#emit(event),
    };
  }

  async #save(): Promise<void> {
    this.#state.updated_at = this.#deps.clock.now().toISOString();
    await this.#deps.state.save(this.#state);
    const sink = this.#deps.sink;
    if (sink !== undefined) {
      const latest = this.#state.tasks.at(-1);
      // Best-effort: the control plane may be off; the state file is the record.
      if (latest !== undefined) await sink.recordDaemonTask(this.#deps.repo, latest).catch(() => {});
    }
  }

  #emit(event: DaemonEvent): void {
    this.#deps.onEvent({ ...event, ts: this.#deps.clock.now().toISOString() });
  }
}

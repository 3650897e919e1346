import { errorMessage } from '../../domain/errors.ts';
import type { Clock } from '../ports.ts';
import type {
  ClippyCounter,
  DaemonStateStore,
  DaemonTaskSink,
  TaskRunner,
  Validator,
} from './daemon-ports.ts';
import type { DaemonEvent, StampedDaemonEvent } from './daemon-events.ts';
import { type DaemonState, type DaemonTaskRecord, emptyState, freshRecord } from './daemon-state.ts';
import { findRecord, taskView } from './daemon-status.ts';
import type { OpenSpecChange, OpenSpecSource, OpenSpecTask } from './openspec.ts';
import type { Repository } from './repository.ts';
import { buildTaskText } from './task-text.ts';

/** Everything the daemon works through (ports only: SPEC §2). */
export interface CompletionDaemonDeps {
  readonly repo: string;
  readonly openspec: OpenSpecSource;
  readonly git: Repository;
  readonly runner: TaskRunner;
  readonly validator: Validator;
  readonly state: DaemonStateStore;
  readonly sink?: DaemonTaskSink | undefined;
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
}

/** How a daemon ended: cancelled (SIGINT/SIGTERM) or after `--once`, and how many tasks are blocked. */
export interface DaemonOutcome {
  readonly cancelled: boolean;
  readonly blocked: number;
}

type TaskOutcome = 'done' | 'blocked' | 'cancelled';

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
    try {
      await git.ensureReady();
      this.#state = (await this.#deps.state.load()) ?? this.#state;
      this.#state.pid = this.#deps.owner.pid;
      this.#state.host = this.#deps.owner.host;
      await this.#save();
      this.#emit({
        event: 'daemon_start',
        repo: this.#deps.repo,
        changes: this.#options.changes,
        max_attempts: this.#options.maxAttempts,
        interval_s: Math.round(this.#options.intervalMs / 1000),
        once: this.#options.once,
      });
      for (;;) {
        const outcome = await this.#pass(signal);
        this.#retryBlocked = false;
        if (outcome === 'cancelled' || signal.aborted) return this.#stop('cancelled');
        if (this.#options.once) return this.#stop('once');
        this.#emit({ event: 'idle', next_scan_s: Math.round(this.#options.intervalMs / 1000) });
        await sleep(this.#options.intervalMs, signal);
        if (signal.aborted) return this.#stop('cancelled');
      }
    } finally {
      this.#state.pid = null;
      await this.#save().catch(() => {});
      await release();
    }
  }

  #stop(reason: 'once' | 'cancelled'): DaemonOutcome {
    const blocked = this.#state.tasks.filter((task) => task.status === 'blocked').length;
    this.#emit({ event: 'daemon_stop', reason, blocked });
    return { cancelled: reason === 'cancelled', blocked };
  }

  /** One scan: every change in name order, each change's tasks in document order. */
  async #pass(signal: AbortSignal): Promise<'idle' | 'cancelled'> {
    const scan = await this.#deps.openspec.scan();
    const wanted = (id: string) => this.#options.changes.length === 0 || this.#options.changes.includes(id);
    for (const problem of scan.unreadable) {
      if (wanted(problem.id))
        this.#emit({ event: 'change_unreadable', change: problem.id, message: problem.message });
    }
    for (const change of scan.changes.filter((c) => wanted(c.id))) {
      const done = change.tasks.filter((task) => task.done);
      for (const task of change.tasks) {
        if (task.done) continue;
        const record = findRecord(this.#state, change.id, task.id);
        if (record?.status === 'blocked' && record.text === task.text && !this.#retryBlocked) {
          this.#emit({ event: 'change_stopped', change: change.id, task: task.id, reason: 'blocked' });
          break;
        }
        const outcome = await this.#work(change, task, done, signal);
        if (outcome === 'cancelled') return 'cancelled';
        if (outcome === 'blocked') {
          this.#emit({ event: 'change_stopped', change: change.id, task: task.id, reason: 'blocked' });
          break;
        }
        done.push({ ...task, done: true });
      }
    }
    const counts = { done: 0, pending: 0, blocked: 0 };
    for (const change of (await this.#deps.openspec.scan()).changes.filter((c) => wanted(c.id))) {
      for (const task of change.tasks) {
        const view = taskView(change.id, task, findRecord(this.#state, change.id, task.id), true);
        if (view.status === 'done') counts.done += 1;
        else if (view.status === 'blocked') counts.blocked += 1;
        else counts.pending += 1;
      }
    }
    this.#emit({ event: 'pass_end', ...counts });
    return 'idle';
  }

  async #work(
    change: OpenSpecChange,
    task: OpenSpecTask,
    done: readonly OpenSpecTask[],
    signal: AbortSignal,
  ): Promise<TaskOutcome> {
    const { git, runner, validator } = this.#deps;
    const record = this.#track(freshRecord(change.id, task.id, task.text));
    const startedMs = this.#deps.clock.now().getTime();
    record.status = 'running';
    record.started_at = new Date(startedMs).toISOString();
    let runMs = 0;
    let validationMs = 0;
    // The tree is at the last commit: the figure the validated attempt is compared with.
    let clippyMs = await this.#countClippy(record, 'clippy_before', signal);
    let feedback: string | null = null;
    while (record.attempts < this.#options.maxAttempts) {
      if (signal.aborted) return this.#cancel(record);
      const attempt = record.attempts + 1;
      await this.#save();
      this.#emit({ event: 'task_start', task: this.#view(record), attempt });
      const text = buildTaskText({
        change,
        task,
        done,
        attempt,
        maxAttempts: this.#options.maxAttempts,
        feedback,
      });
      const runStart = this.#deps.clock.now().getTime();
      const started = await runner.run(text, signal);
      runMs += this.#deps.clock.now().getTime() - runStart;
      if (started.kind === 'cancelled' || signal.aborted) return this.#cancel(record);
      if (started.kind === 'backend_down') {
        await this.#backendDown(started.message, signal);
        continue;
      }
      this.#backendUp();
      const { result } = started;
      record.attempts = attempt;
      record.run_ids.push(result.run_id);
      record.tokens += result.usage.total_tokens;
      const error = result.error === null ? null : `${result.error.code}: ${result.error.message}`;
      this.#emit({
        event: 'run_end',
        task: this.#view(record),
        attempt,
        run_id: result.run_id,
        status: result.status,
        error,
      });
      if (result.status === 'cancelled') return this.#cancel(record);
      if (result.status !== 'succeeded') {
        feedback = `The run ended "${result.status}"${error === null ? '' : ` (${error})`} without finishing the task.`;
        this.#retry(record, feedback);
        continue;
      }
      const validateStart = this.#deps.clock.now().getTime();
      const validation = await validator.validate(signal);
      validationMs += this.#deps.clock.now().getTime() - validateStart;
      if (signal.aborted) return this.#cancel(record);
      this.#emit({
        event: 'validation',
        task: this.#view(record),
        attempt,
        ok: validation.ok,
        tests_passed: validation.testsPassed,
        report: validation.ok ? null : validation.report,
        summary: validation.ok ? null : validation.summary,
      });
      if (!validation.ok) {
        feedback = `The validation commands failed:\n${validation.report}`;
        this.#retry(record, feedback);
        continue;
      }
      clippyMs += await this.#countClippy(record, 'clippy_after', signal);
      if (signal.aborted) return this.#cancel(record);
      try {
        await this.#deps.openspec.tick(change.id, task);
        const message = commitMessage(change.id, task, result.run_id, attempt, this.#options.maxAttempts);
        const { commit, size } = await git.commit(message);
        const endMs = this.#deps.clock.now().getTime();
        Object.assign(record, {
          status: 'done',
          commit,
          diagnostics: null,
          ended_at: new Date(endMs).toISOString(),
          seconds: Math.round((endMs - startedMs) / 100) / 10,
          files_changed: size.files,
          lines_added: size.added,
          lines_removed: size.removed,
          tests_passed: validation.testsPassed,
        });
        await this.#save();
        this.#emit({
          event: 'task_done',
          task: this.#view(record),
          seconds: record.seconds ?? 0,
          tokens: record.tokens,
          validation_ms: validationMs,
          clippy_before: record.clippy_before,
          clippy_after: record.clippy_after,
          clippy_ms: clippyMs,
          // What the daemon itself cost beyond the runs, validation and clippy: prompt, tick, git, state.
          overhead_ms: endMs - startedMs - runMs - validationMs - clippyMs,
        });
        return 'done';
      } catch (error) {
        // A failed hook or a tasks.md changed under us: never half a task.
        return this.#block(record, `Committing the task failed: ${errorMessage(error)}`);
      }
    }
    return this.#block(record, feedback ?? 'no attempt was accepted');
  }

  /**
   * Records clippy's warning count in the given field, or null and why; returns the time it took.
   * A counter that throws is a null figure too: a figure never fails a task.
   */
  async #countClippy(
    record: DaemonTaskRecord,
    field: 'clippy_before' | 'clippy_after',
    signal: AbortSignal,
  ): Promise<number> {
    const counter = this.#deps.clippy;
    if (counter === undefined || signal.aborted) return 0;
    const start = this.#deps.clock.now().getTime();
    const count = await counter
      .countClippy(signal)
      .catch((error: unknown) => ({ warnings: null, reason: errorMessage(error) }) as const);
    record[field] = count.warnings;
    // One reason when both figures are missing for the same one (clippy not allowed).
    if (count.warnings === null && count.reason !== record.clippy_note) {
      const note = field === 'clippy_before' ? count.reason : `after the task: ${count.reason}`;
      record.clippy_note = record.clippy_note === null ? note : `${record.clippy_note}; ${note}`;
    }
    return this.#deps.clock.now().getTime() - start;
  }

  #retry(record: DaemonTaskRecord, diagnostics: string): void {
    record.diagnostics = diagnostics;
    if (record.attempts < this.#options.maxAttempts) {
      this.#emit({ event: 'task_retry', task: this.#view(record), diagnostics });
    }
  }

  async #block(record: DaemonTaskRecord, diagnostics: string): Promise<TaskOutcome> {
    await this.#deps.git.restore();
    Object.assign(record, { status: 'blocked', diagnostics, ended_at: this.#deps.clock.now().toISOString() });
    await this.#save();
    this.#emit({ event: 'task_blocked', task: this.#view(record), diagnostics });
    return 'blocked';
  }

  async #cancel(record: DaemonTaskRecord): Promise<TaskOutcome> {
    await this.#deps.git.restore();
    record.status = 'pending';
    await this.#save();
    this.#emit({ event: 'task_cancelled', task: this.#view(record) });
    return 'cancelled';
  }

  async #backendDown(message: string, signal: AbortSignal): Promise<void> {
    const backend = this.#state.backend;
    backend.state = 'down';
    backend.failures += 1;
    backend.last_error = message;
    const base = this.#options.backoffBaseMs ?? 1000;
    const waitMs = Math.min(base * 2 ** (backend.failures - 1), this.#options.intervalMs);
    backend.backoff_s = waitMs / 1000;
    await this.#save();
    this.#emit({ event: 'backend_down', message, failures: backend.failures, backoff_s: backend.backoff_s });
    await sleep(waitMs, signal);
  }

  #backendUp(): void {
    const backend = this.#state.backend;
    const wasDown = backend.state === 'down';
    Object.assign(backend, {
      state: 'up',
      last_ok: this.#deps.clock.now().toISOString(),
      failures: 0,
      backoff_s: 0,
      last_error: null,
    });
    if (wasDown) this.#emit({ event: 'backend_up' });
  }

  /** Puts the record in the state, replacing an older one of the same task. */
  #track(record: DaemonTaskRecord): DaemonTaskRecord {
    const others = this.#state.tasks.filter((t) => !(t.change === record.change && t.id === record.id));
    this.#state.tasks = [...others, record];
    return record;
  }

  #view(record: DaemonTaskRecord) {
    return {
      change: record.change,
      id: record.id,
      text: record.text,
      status: record.status,
      attempts: record.attempts,
      run_ids: [...record.run_ids],
      commit: record.commit,
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

/** Subject naming change and task; the `Fabric-Run` trailer links the commit to its run. */
export function commitMessage(
  change: string,
  task: OpenSpecTask,
  runId: string,
  attempt: number,
  maxAttempts: number,
): string {
  const subject = `${change} ${task.id}: ${task.text}`;
  const short = subject.length > 72 ? `${subject.slice(0, 71)}…` : subject;
  return (
    `${short}\n\n` +
    `OpenSpec change ${change}, task ${task.id}: ${task.text}\n` +
    `Implemented by the fabric daemon (attempt ${attempt} of ${maxAttempts}); validated before this commit.\n\n` +
    `Fabric-Run: ${runId}\n`
  );
}

/** Waits, or less when the signal aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

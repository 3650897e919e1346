/**
 * The daemon's work on one task (SPEC §11): attempts until one validates or `maxAttempts` are
 * spent, each attempt's outcome handled in an exhaustive switch; then the tick and the commit, or
 * the block (tree restored), or the cancel (tree restored, task pending).
 */
import { FabricError, errorMessage } from '../../domain/errors.ts';
import type { Clock } from '../ports.ts';
import { newRunId } from '../run/run-id.ts';
import { sleep } from './abortable-sleep.ts';
import { type AttemptOutcome, type AttemptPorts, type TaskTimes, attemptTask } from './attempt-steps.ts';
import { type Backoff, markBackendDown, markBackendUp } from './backend-health.ts';
import { commitMessage } from './commit-message.ts';
import type { DaemonEvent } from './daemon-events.ts';
import type { ClippyCounter, TaskRunner, Validator } from './daemon-ports.ts';
import { type DaemonState, type DaemonTaskRecord, freshRecord, putLast } from './daemon-state.ts';
import { recordView } from './daemon-status.ts';
import type { OpenSpecChange, OpenSpecSource, OpenSpecTask } from './openspec.ts';
import type { Repository } from './repository.ts';
import { parkTask, unparkTask } from './parked-task.ts';
import { buildTaskText } from './task-text.ts';

/**
 * How the work on a task ended; the pass stops the task's change unless it is `done` (`parked`:
 * its run waits for an approval, its edits set aside, and the daemon goes on with other changes).
 */
export type TaskOutcome = 'done' | 'blocked' | 'cancelled' | 'parked';

/** What working on a task reaches: the daemon's ports, its settings, and its state and reports. */
export interface TaskWorkContext {
  readonly runner: TaskRunner;
  readonly validator: Validator;
  readonly clippy: ClippyCounter | undefined;
  readonly openspec: Pick<OpenSpecSource, 'tick'>;
  readonly git: Pick<
    Repository,
    'restore' | 'commit' | 'changedFiles' | 'ensureReady' | 'setAside' | 'bringBack' | 'dropAside'
  >;
  readonly clock: Clock;
  /** The daemon's state: the task's record goes in it, and the backend's health. */
  readonly state: DaemonState;
  /** Attempts per model. */
  readonly maxAttempts: number;
  /**
   * The models from cheapest to strongest (`daemon.models`), each given `maxAttempts`; one
   * undefined entry: the runner's own model.
   */
  readonly models: readonly (string | undefined)[];
  /** Times a failing validation runs again before an attempt is spent. */
  readonly reruns: number;
  readonly backoff: Backoff;
  /** With --once: how long no model may answer before the daemon gives up; undefined: for ever. */
  readonly backendWaitMs?: number | undefined;
  /** When the current outage began (ms since the epoch), shared across tasks; null: none. */
  readonly outage: { since: number | null };
  /** Writes the state (and the record to the control plane). */
  save(): Promise<void>;
  emit(event: DaemonEvent): void;
}

/** The task, its change, and the change's tasks already done (they go in the task text). */
export interface TaskItem {
  readonly change: OpenSpecChange;
  readonly task: OpenSpecTask;
  readonly done: readonly OpenSpecTask[];
  /** Tests failing at HEAD before the change's first task. */
  readonly baseline: ReadonlySet<string>;
  /** The run of the attempt a killed daemon left on this task: it goes on (SPEC §18). */
  readonly resume?: string | undefined;
  /** The task's run is parked on an approval (its record says where its edits are): take it up. */
  readonly parked?: boolean | undefined;
}

/** Works on a task until it is done, blocked or cancelled. */
export async function workTask(
  ctx: TaskWorkContext,
  item: TaskItem,
  signal: AbortSignal,
): Promise<TaskOutcome> {
  const { change, task } = item;
  // A resumed attempt keeps the task's record: its attempts, runs, tokens and clippy figure.
  const kept =
    item.resume === undefined && item.parked !== true
      ? undefined
      : ctx.state.tasks.find((t) => t.change === change.id && t.id === task.id);
  let resuming = kept === undefined ? undefined : item.resume;
  // Last in the state (the record the control plane is sent), kept or new.
  const record = putLast(ctx.state, kept ?? freshRecord(change.id, task.id, task.text));
  /** The approval a parked run's answer came to, said when it goes on. */
  let afterApproval: string | undefined;
  if (kept !== undefined && item.parked === true) {
    const up = await unparkTask(ctx, kept);
    if (up.kind === 'waiting') return 'parked';
    if (up.kind === 'blocked') return block(ctx, record, up.diagnostics);
    if (up.kind === 'resume') {
      resuming = up.runId;
      afterApproval = up.approvalId;
    }
  } else if (resuming !== undefined && ctx.runner.parked !== undefined) {
    // A daemon killed as its run parked: the tree holds the run's edits; set them aside now.
    const state = await ctx.runner.parked(resuming);
    if (state.kind === 'waiting') {
      await parkTask(ctx, record, { runId: resuming, approval: state.approval });
      return 'parked';
    }
  }
  const startedMs = ctx.clock.now().getTime();
  record.status = 'running';
  const times: TaskTimes = { runMs: 0, validationMs: 0, clippyMs: 0 };
  if (kept === undefined) {
    record.started_at = new Date(startedMs).toISOString();
    // The tree is at the last commit: the figure the validated attempt is compared with.
    times.clippyMs = await countClippy(ctx, record, 'clippy_before', signal);
  }
  const ports: AttemptPorts = {
    runner: ctx.runner,
    validator: ctx.validator,
    clock: ctx.clock,
    emit: (event) => ctx.emit(event),
    changedFiles: () => ctx.git.changedFiles(),
    backendUp: () => {
      ctx.outage.since = null;
      if (markBackendUp(ctx.state.backend, ctx.clock.now())) ctx.emit({ event: 'backend_up' });
    },
  };
  const judging = {
    baseline: item.baseline,
    reruns: ctx.reruns,
    tasksFile: change.tasksFile,
    noEditOk: change.tasks.some((t) => t.parent === task.id),
  };
  let feedback: string | null = null;
  const budget = ctx.maxAttempts * ctx.models.length;
  while (record.attempts < budget) {
    if (signal.aborted) return cancel(ctx, record);
    const attempt = record.attempts + 1;
    // The run's id is saved before the run starts: a daemon killed now resumes it when started again.
    const runId = resuming ?? newRunId(ctx.clock);
    record.run_in_flight = runId;
    await ctx.save();
    // After a model's attempts are spent, the next one takes the task over (escalation).
    const model = ctx.models[Math.floor((attempt - 1) / ctx.maxAttempts)];
    if (resuming === undefined)
      ctx.emit({ event: 'task_start', task: recordView(record), attempt, model: model ?? null });
    else
      ctx.emit({
        event: 'task_resumed',
        task: recordView(record),
        attempt,
        run_id: runId,
        ...(afterApproval === undefined ? {} : { after_approval: afterApproval }),
      });
    const text = buildTaskText({
      change,
      task,
      done: item.done,
      attempt,
      maxAttempts: budget,
      feedback,
    });
    const outcome: AttemptOutcome = await attemptTask(ports, {
      record,
      attempt,
      text,
      runId,
      resume: resuming !== undefined,
      model,
      times,
      signal,
      judging,
    });
    // A resumed run that was asked again only while no backend answered is still to go on.
    if (outcome.kind !== 'backend_down') {
      resuming = undefined;
      afterApproval = undefined;
    }
    switch (outcome.kind) {
      case 'cancelled':
        return cancel(ctx, record);
      case 'parked':
        await parkTask(ctx, record, outcome);
        return 'parked';
      case 'not_resumable':
        record.run_in_flight = null;
        ctx.emit({
          event: 'resume_refused',
          task: recordView(record),
          run_id: runId,
          reason: outcome.reason,
        });
        // As without resume: the attempt starts again on a clean tree, and a tree the killed
        // attempt left changed is refused (the daemon never discards what it cannot vouch for).
        await ctx.git.ensureReady();
        break;
      case 'backend_down':
        if (!(await waitForBackend(ctx, outcome.message, signal)))
          return giveUp(ctx, record, outcome.message);
        break;
      case 'failed':
        feedback = outcome.feedback;
        retry(ctx, record, feedback);
        break;
      case 'validated':
        return complete(ctx, { item, record, attempt, startedMs, times, validated: outcome }, signal);
    }
  }
  return block(ctx, record, feedback ?? 'no attempt was accepted');
}

/** A validated attempt, ready to be ticked and committed. */
interface Completion {
  readonly item: TaskItem;
  readonly record: DaemonTaskRecord;
  readonly attempt: number;
  readonly startedMs: number;
  readonly times: TaskTimes;
  readonly validated: Extract<AttemptOutcome, { kind: 'validated' }>;
}

/** Clippy after, then the tick and the commit together; a commit that fails blocks the task. */
async function complete(ctx: TaskWorkContext, done: Completion, signal: AbortSignal): Promise<TaskOutcome> {
  const { item, record, times, validated } = done;
  times.clippyMs += await countClippy(ctx, record, 'clippy_after', signal);
  if (signal.aborted) return cancel(ctx, record);
  try {
    await ctx.openspec.tick(item.change.id, item.task);
    const budget = ctx.maxAttempts * ctx.models.length;
    // The model of the validated attempt's run: the last one the record lists.
    const model = record.models?.at(-1) ?? null;
    const message = commitMessage(item.change.id, item.task, validated.runId, model, done.attempt, budget);
    const { commit, size } = await ctx.git.commit(message);
    const endMs = ctx.clock.now().getTime();
    Object.assign(record, {
      status: 'done',
      commit,
      diagnostics: null,
      ended_at: new Date(endMs).toISOString(),
      seconds: Math.round((endMs - done.startedMs) / 100) / 10,
      files_changed: size.files,
      lines_added: size.added,
      lines_removed: size.removed,
      tests_passed: validated.testsPassed,
      preexisting_failures: [...validated.preexisting],
      flaky_tests: [...validated.flaky],
    });
    await ctx.save();
    ctx.emit({
      event: 'task_done',
      task: recordView(record),
      seconds: record.seconds ?? 0,
      tokens: record.tokens,
      validation_ms: times.validationMs,
      clippy_before: record.clippy_before,
      clippy_after: record.clippy_after,
      clippy_ms: times.clippyMs,
      preexisting_failures: [...validated.preexisting],
      flaky_tests: [...validated.flaky],
      // What the daemon itself cost beyond the runs, validation and clippy: prompt, tick, git, state.
      overhead_ms: endMs - done.startedMs - times.runMs - times.validationMs - times.clippyMs,
    });
    return 'done';
  } catch (error) {
    // A failed hook or a tasks.md changed under us: never half a task.
    return block(ctx, record, `Committing the task failed: ${errorMessage(error)}`);
  }
}

/**
 * Records clippy's warning count in the given field, or null and why; returns the time it took.
 * A counter that throws is a null figure too: a figure never fails a task.
 */
async function countClippy(
  ctx: TaskWorkContext,
  record: DaemonTaskRecord,
  field: 'clippy_before' | 'clippy_after',
  signal: AbortSignal,
): Promise<number> {
  const counter = ctx.clippy;
  if (counter === undefined || signal.aborted) return 0;
  const start = ctx.clock.now().getTime();
  const count = await counter
    .countClippy(signal)
    .catch((error: unknown) => ({ warnings: null, reason: errorMessage(error) }) as const);
  record[field] = count.warnings;
  // One reason when both figures are missing for the same one (clippy not allowed).
  if (count.warnings === null && count.reason !== record.clippy_note) {
    const note = field === 'clippy_before' ? count.reason : `after the task: ${count.reason}`;
    record.clippy_note = record.clippy_note === null ? note : `${record.clippy_note}; ${note}`;
  }
  return ctx.clock.now().getTime() - start;
}

/** A failed attempt: its diagnostics are kept, and said when another attempt follows. */
function retry(ctx: TaskWorkContext, record: DaemonTaskRecord, diagnostics: string): void {
  record.diagnostics = diagnostics;
  if (record.attempts < ctx.maxAttempts * ctx.models.length) {
    ctx.emit({ event: 'task_retry', task: recordView(record), diagnostics });
  }
}

/**
 * No model reachable: the backend is marked down and the daemon waits, its backoff doubling.
 * False when `backendWaitMs` (--once) has passed since the outage began: time to give up.
 */
async function waitForBackend(ctx: TaskWorkContext, message: string, signal: AbortSignal): Promise<boolean> {
  const backend = ctx.state.backend;
  let waitMs = markBackendDown(backend, message, ctx.backoff);
  if (ctx.backendWaitMs !== undefined) {
    const now = ctx.clock.now().getTime();
    ctx.outage.since ??= now;
    const left = ctx.outage.since + ctx.backendWaitMs - now;
    if (left <= 0) return false;
    if (left < waitMs) {
      waitMs = left;
      backend.backoff_s = left / 1000;
    }
  }
  await ctx.save();
  ctx.emit({ event: 'backend_down', message, failures: backend.failures, backoff_s: backend.backoff_s });
  await sleep(waitMs, signal);
  return true;
}

/**
 * `--once` and no model for `backendWaitMs`: the tree goes back, the task stays pending, and the
 * daemon ends with `backend_unavailable` (exit 4), naming the servers asked and the fix as
 * `fabric run` does.
 */
async function giveUp(ctx: TaskWorkContext, record: DaemonTaskRecord, message: string): Promise<never> {
  await ctx.git.restore();
  record.status = 'pending';
  await ctx.save();
  const waited = Math.round((ctx.backendWaitMs ?? 0) / 1000);
  throw new FabricError(
    'backend_unavailable',
    `${message}\nfabric daemon --once gave up after ${waited}s without a model (daemon.backend_wait_s); ${record.change} ${record.id} is still pending. Start a model server and run it again.`,
  );
}

async function block(
  ctx: TaskWorkContext,
  record: DaemonTaskRecord,
  diagnostics: string,
): Promise<TaskOutcome> {
  await ctx.git.restore();
  Object.assign(record, {
    status: 'blocked',
    run_in_flight: null,
    diagnostics,
    ended_at: ctx.clock.now().toISOString(),
  });
  await ctx.save();
  ctx.emit({ event: 'task_blocked', task: recordView(record), diagnostics });
  return 'blocked';
}

async function cancel(ctx: TaskWorkContext, record: DaemonTaskRecord): Promise<TaskOutcome> {
  await ctx.git.restore();
  record.status = 'pending';
  record.run_in_flight = null;
  await ctx.save();
  ctx.emit({ event: 'task_cancelled', task: recordView(record) });
  return 'cancelled';
}

/**
 * A task whose run is parked on an approval (SPEC §19). The daemon works through one tree, so a
 * parked run's edits are set aside (a ref of the fabric's own) and the tree put back: the daemon
 * goes on with other changes meanwhile. Once the approval is answered, the edits are brought back
 * onto the tree as it is then and the run goes on under its id; a person who cancelled the run
 * blocks the task; edits that no longer apply start the attempt again, the ref kept.
 */
import type { Clock } from '../ports.ts';
import type { DaemonEvent } from './daemon-events.ts';
import type { TaskRunner } from './daemon-ports.ts';
import { sleep } from './abortable-sleep.ts';
import { type DaemonState, type DaemonTaskRecord, putLast } from './daemon-state.ts';
import { recordView } from './daemon-status.ts';
import type { OpenSpecScan } from './openspec.ts';
import type { Repository } from './repository.ts';

/** What parking and unparking reach: git, the runner, the clock, the state and the reports. */
export interface ParkingContext {
  readonly runner: Pick<TaskRunner, 'parked' | 'cancelParked'>;
  readonly git: Pick<Repository, 'setAside' | 'bringBack' | 'dropAside' | 'restore'>;
  readonly clock: Clock;
  /** The daemon's state: a record saved is moved last, the one the control plane is sent. */
  readonly state: DaemonState;
  save(): Promise<void>;
  emit(event: DaemonEvent): void;
}

/**
 * The run parked: its edits set aside, the record saved `awaiting_approval`, then the tree put
 * back. A daemon killed between the save and the restore finds the tree holding exactly what was
 * set aside and restores it when it starts (`holdsAside`).
 */
export async function parkTask(
  ctx: ParkingContext,
  record: DaemonTaskRecord,
  parked: { readonly runId: string; readonly approval: { readonly id: string; readonly call: string } },
): Promise<void> {
  const { runId, approval } = parked;
  const ref = await ctx.git.setAside(
    runId,
    `${record.change} ${record.id}: run ${runId} parked on approval ${approval.id}\n\n` +
      `${record.text}\n\nWaits for: ${approval.call}\n`,
  );
  record.status = 'awaiting_approval';
  record.run_in_flight = runId;
  record.parked = {
    run_id: runId,
    approval_id: approval.id,
    call: approval.call,
    ref,
    since: ctx.clock.now().toISOString(),
  };
  await ctx.save();
  await ctx.git.restore();
  ctx.emit({
    event: 'task_parked',
    task: recordView(record),
    run_id: runId,
    approval_id: approval.id,
    call: approval.call,
    ref,
  });
}

/** What taking up a parked task came to. */
export type Unparked =
  /** The approval is still pending: the change waits. */
  | { readonly kind: 'waiting' }
  /** Answered: the edits are back in the tree and the run `runId` goes on. */
  | { readonly kind: 'resume'; readonly runId: string; readonly approvalId: string }
  /** The edits no longer apply (or the run cannot go on): the attempt starts again; nothing spent. */
  | { readonly kind: 'restart' }
  /** A person cancelled the run while it waited: the task is blocked with why. */
  | { readonly kind: 'blocked'; readonly diagnostics: string };

/** Takes up a parked task whose turn has come: brings its edits back when its approval is answered. */
export async function unparkTask(ctx: ParkingContext, record: DaemonTaskRecord): Promise<Unparked> {
  const parked = record.parked;
  if (parked === undefined || parked === null || ctx.runner.parked === undefined) return { kind: 'restart' };
  const state = await ctx.runner.parked(parked.run_id);
  if (state.kind === 'waiting') return { kind: 'waiting' };
  if (state.kind === 'ended') {
    record.parked = null;
    record.run_in_flight = null;
    return {
      kind: 'blocked',
      diagnostics:
        `Its run ${parked.run_id} ended ${state.status} while it waited for approval ${parked.approval_id} (${parked.call}). ` +
        `Its edits are kept at ${parked.ref} (git cherry-pick --no-commit ${parked.ref} brings them back); ` +
        'fabric daemon --retry-blocked tries the task again.',
    };
  }
  const back = await ctx.git.bringBack(parked.ref);
  if (!back.ok) {
    // The run is not gone on with: it ends cancelled, and the attempt starts again on a clean tree.
    await ctx.runner.cancelParked?.(parked.run_id).catch(() => {});
    record.parked = null;
    record.run_in_flight = null;
    ctx.emit({
      event: 'resume_refused',
      task: recordView(record),
      run_id: parked.run_id,
      reason: back.reason,
      ref: parked.ref,
    });
    return { kind: 'restart' };
  }
  record.status = 'running';
  record.parked = null;
  record.run_in_flight = parked.run_id;
  await ctx.save();
  await ctx.git.dropAside(parked.ref);
  return { kind: 'resume', runId: parked.run_id, approvalId: parked.approval_id };
}

/**
 * A parked task that is no longer to do as it was (ticked, its text changed, gone): its run ends
 * cancelled (nobody is asked any more) and the record goes back to pending; its edits stay at the ref.
 */
export async function forgetParked(
  ctx: ParkingContext,
  record: DaemonTaskRecord,
  why: string,
): Promise<void> {
  const parked = record.parked;
  if (parked === undefined || parked === null) return;
  await ctx.runner.cancelParked?.(parked.run_id).catch(() => {});
  putLast(ctx.state, record);
  record.status = 'pending';
  record.parked = null;
  record.run_in_flight = null;
  await ctx.save();
  ctx.emit({
    event: 'resume_refused',
    task: recordView(record),
    run_id: parked.run_id,
    reason: why,
    ref: parked.ref,
  });
}

/** True while the parked task's approval is pending (a runner that cannot tell: false, take it up). */
export async function isWaiting(ctx: ParkingContext, record: DaemonTaskRecord): Promise<boolean> {
  const parked = record.parked;
  if (parked === undefined || parked === null || ctx.runner.parked === undefined) return false;
  return (await ctx.runner.parked(parked.run_id)).kind === 'waiting';
}

/**
 * Before a pass: parked tasks that are no longer to do as they were (ticked by hand, text
 * changed, gone from their change) are forgotten, their runs cancelled.
 */
export async function settleParked(
  ctx: ParkingContext,
  state: DaemonState,
  scan: OpenSpecScan,
  wanted: (change: string) => boolean,
): Promise<void> {
  for (const record of state.tasks.filter((t) => t.status === 'awaiting_approval')) {
    if (!wanted(record.change)) continue;
    const change = scan.changes.find((c) => c.id === record.change);
    // An unreadable change is left alone: its tasks are unknown, not gone.
    if (change === undefined && scan.unreadable.some((u) => u.id === record.change)) continue;
    const why = noLongerToDo(scan, record);
    if (why !== null) await forgetParked(ctx, record, why);
  }
}

/** Why a task the daemon left unfinished is no longer to do as it was; null: it still is. */
export function noLongerToDo(scan: OpenSpecScan, record: DaemonTaskRecord): string | null {
  const task = scan.changes.find((c) => c.id === record.change)?.tasks.find((t) => t.id === record.id);
  if (task === undefined) return 'its task is no longer in the change';
  if (task.done) return 'its task is ticked already';
  return task.text !== record.text ? 'its task text changed' : null;
}

/**
 * The wait between passes: the interval, or less once the approval of a task parked and waiting
 * when the wait began is answered (asked each second, only while one is), so its run goes on
 * within a second. Tasks of changes not worked on, or answered already but not taken up (their
 * change stopped before them), do not end the wait: the daemon would pass again and again.
 */
export async function idleUntilAnswered(
  ctx: ParkingContext,
  state: DaemonState,
  wanted: (change: string) => boolean,
  intervalMs: number,
  signal: AbortSignal,
): Promise<void> {
  const end = ctx.clock.now().getTime() + intervalMs;
  const watched: DaemonTaskRecord[] = [];
  for (const record of state.tasks) {
    if (record.status !== 'awaiting_approval' || !wanted(record.change)) continue;
    if (await isWaiting(ctx, record).catch(() => false)) watched.push(record);
  }
  for (;;) {
    const left = end - ctx.clock.now().getTime();
    if (left <= 0 || signal.aborted) return;
    if (watched.length === 0) return sleep(left, signal);
    await sleep(Math.min(left, 1000), signal);
    for (const record of watched) {
      // A store that cannot be read now is asked again at the next second.
      if (!(await isWaiting(ctx, record).catch(() => true))) return;
    }
  }
}

/**
 * A daemon killed between saving a task parked and putting the tree back finds the tree holding
 * exactly what was set aside: it is put back now (the edits are safe at the ref). Any other
 * change in the tree is left for `ensureReady` to refuse.
 */
export async function restoreSetAside(
  state: DaemonState,
  git: Pick<Repository, 'holdsAside' | 'restore' | 'changedFiles'>,
): Promise<void> {
  const refs = state.tasks.flatMap((t) =>
    t.status === 'awaiting_approval' && t.parked ? [t.parked.ref] : [],
  );
  if (refs.length === 0 || (await git.changedFiles()).length === 0) return;
  for (const ref of refs) if (await git.holdsAside(ref).catch(() => false)) return git.restore();
}

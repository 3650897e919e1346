/**
 * Cancelling a run (SPEC §8): a run in progress in this process is aborted; a run
 * queued for a worker, or running on one, gets a cancel request, which the worker hears with its
 * heartbeat. Either way the caller waits a bounded time for the run to record its end, then
 * answers with the run as it ended, or that it is still cancelling. Nothing here does I/O.
 */
import type { WorkerRegistry } from '../queue/queue-ports.ts';
import type { RunRecord } from '../runs/run-record.ts';

/** A run in progress in this process. */
export interface CancellableRun {
  /** Aborts the run; it writes its `run_end` (cancelled) as it stops. */
  cancel(): void;
  /** Settles once the run has ended. */
  readonly settled: Promise<unknown>;
}

/** What cancelling reaches. */
export interface CancelRunDeps {
  /** The run with this id in progress in this process, if it is. */
  readonly live: (runId: string) => CancellableRun | undefined;
  /** The run's record (the read model): throws `run_not_found` when there is none. */
  readonly show: (runId: string) => Promise<RunRecord>;
  /** Where cancel requests go when runs are queued for workers; null: runs run here. */
  readonly queue: () => Promise<{ readonly workers: Pick<WorkerRegistry, 'requestCancel'> } | null>;
  /** How long to wait for the run to record its end. Default 10 s. */
  readonly waitMs?: number;
  /** How often to look at a worker's run while waiting. Default 200 ms. */
  readonly pollMs?: number;
  /** Ends a run parked on an approval (SPEC §19): no process runs it. */
  readonly cancelParked?: (runId: string) => Promise<void>;
}

/**
 * How it went: the run `ended` (here is its record), is still `cancelling` after the wait, or was
 * `not_active` (it has ended, or it is no run this process or a worker can stop).
 */
export type CancelOutcome =
  | { readonly kind: 'ended'; readonly record: RunRecord }
  | { readonly kind: 'cancelling' }
  | { readonly kind: 'not_active'; readonly record: RunRecord };

const OPEN = new Set<RunRecord['status']>(['queued', 'running']);

/** Cancels the run with this id and waits (bounded) for it to end. */
export async function cancelRun(deps: CancelRunDeps, runId: string): Promise<CancelOutcome> {
  const waitMs = deps.waitMs ?? 10_000;
  const live = deps.live(runId);
  if (live !== undefined) {
    live.cancel();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([
      live.settled.then(() => true),
      new Promise<false>((done) => {
        timer = setTimeout(() => done(false), waitMs);
      }),
    ]);
    clearTimeout(timer);
    return ended ? { kind: 'ended', record: await deps.show(runId) } : { kind: 'cancelling' };
  }
  const record = await deps.show(runId);
  if (record.status === 'awaiting_approval' && deps.cancelParked !== undefined) {
    await deps.cancelParked(record.run_id);
    return { kind: 'ended', record: await deps.show(runId) };
  }
  const queue = await deps.queue();
  if (queue === null || !(record.status === 'queued' || (record.status === 'running' && !record.live)))
    return { kind: 'not_active', record };
  // The worker that runs it polls for cancel requests with its heartbeat.
  await queue.workers.requestCancel(runId);
  const deadline = Date.now() + waitMs;
  for (;;) {
    const now = await deps.show(runId);
    if (!OPEN.has(now.status)) return { kind: 'ended', record: now };
    if (Date.now() > deadline) return { kind: 'cancelling' };
    await new Promise((resolve) => setTimeout(resolve, deps.pollMs ?? 200));
  }
}

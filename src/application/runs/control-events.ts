/**
 * Following a run that executes on a `fabric worker`: its events are read from the
 * control plane, where the worker's mirror writes them as they happen. Nothing here does I/O.
 */
import type { RunEvent } from '../../domain/run-events.ts';
import type { ControlRunLookup } from './run-read-model.ts';

/** How often a follower polls the control plane for a worker's new events. */
export const QUEUED_EVENTS_POLL_MS = 100;

/**
 * How many polls a follower waits for a missing event before asking again whether the run's
 * worker still holds its lease (1 s at the default poll); with a store that cannot tell, how
 * many polls it waits before going past the gap (10 s).
 */
const GAP_POLLS = 10;
const GAP_POLLS_BLIND = 100;

/** A row in one of these statuses may still write events. */
const OPEN = new Set(['queued', 'running']);

/** Where a queued run's control row is found. */
export interface QueuedRunSource {
  /** True when runs are queued for workers (only then is the control plane asked). */
  readonly queueOn: () => Promise<boolean>;
  readonly control: () => Promise<ControlRunLookup | null>;
}

/** The control plane, when the queue is on and it has this run (one a worker runs or ran); else null. */
export async function queuedRunControl(
  source: QueuedRunSource,
  runId: string,
): Promise<ControlRunLookup | null> {
  if (!(await source.queueOn())) return null;
  const control = await source.control();
  return control !== null && (await control.getRun(runId)) !== null ? control : null;
}

/**
 * Sends the run's events after `afterSeq` as the control plane gets them, then calls `end` after
 * `run_end`, or once the row says the run will write nothing more (interrupted, not started).
 * Each poll reads only the events after the last one sent (the (run_id, seq) key), and the row
 * only when no event came: a long run costs the same per poll at its end as at its start.
 * Events go out in seq order without holes: a gap (rows lost in an outage, written back from
 * the runlog shortly) is waited for while a worker holds the run's lease, then passed.
 * Returns how to stop following.
 */
export function followControlEvents(
  store: ControlRunLookup,
  runId: string,
  afterSeq: number,
  send: (event: RunEvent) => void,
  end: () => void,
  pollMs = QUEUED_EVENTS_POLL_MS,
): () => void {
  let last = afterSeq;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // Polls spent waiting for a gap to fill: rows the worker's mirror lost in an outage are
  // written back from its runlog within seconds, and a follower waits for them, in order.
  let gapPolls = 0;
  // A gap is passed only once no worker holds the run's lease: a worker holds it until every
  // line of its run, up to run_end, is in the control plane (issue 35), so a gap under a held
  // lease is always filled; once the lease is gone (the worker died, or was cut off past
  // dead_after_s), nothing may fill it.
  let pass = false;
  const gapWait = async (): Promise<void> => {
    gapPolls += 1;
    if (store.leaseHeld === undefined) {
      pass = gapPolls >= GAP_POLLS_BLIND;
      return;
    }
    if (gapPolls % GAP_POLLS !== 0) return;
    pass = !(await store.leaseHeld(runId));
  };
  const drain = async (final = false): Promise<{ count: number; ended: boolean }> => {
    const events = await store.runEvents(runId, last);
    let ended = false;
    for (const event of events) {
      if (event.seq <= last) continue;
      if (event.seq > last + 1 && !final && !pass) {
        await gapWait();
        break;
      }
      gapPolls = 0;
      pass = false;
      last = event.seq;
      send(event);
      if (event.kind === 'run_end') ended = true;
    }
    return { count: events.length, ended };
  };
  const poll = async () => {
    try {
      const read = await drain();
      if (read.ended) return end();
      if (read.count === 0) {
        const row = await store.getRun(runId);
        if (row !== null && !OPEN.has(row.status)) {
          // The run ended without a run_end in the store (interrupted, or never started);
          // events written between the two reads are still sent.
          await drain(true);
          return end();
        }
      }
    } catch {
      // The database blinked; the next poll tries again.
    }
    if (!stopped) timer = setTimeout(() => void poll(), pollMs);
  };
  void poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

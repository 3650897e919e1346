/**
 * Runs that execute on `fabric worker`s (issue 17): their events are streamed from the control
 * plane, where each worker's mirror writes them as they happen. (Their state is the read model's:
 * `application/runs/`.)
 */
import type { ControlStore } from '../../application/control/control-ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { EventSource } from './sse.ts';

/** How often a stream polls the control plane for a worker's new events. */
export const QUEUED_EVENTS_POLL_MS = 100;

/** A row in one of these statuses may still write events. */
const OPEN = new Set(['queued', 'running']);

/**
 * An SSE source that polls the control plane for the run's events after `afterSeq` and ends
 * with `run_end`, or once the row says the run will write nothing more (interrupted, not started).
 * Each poll reads only the events after the last one sent (the (run_id, seq) key), and the row
 * only when no event came: a long run costs the same per poll at its end as at its start.
 */
export function controlEventSource(
  store: ControlStore,
  runId: string,
  afterSeq: number,
  pollMs = QUEUED_EVENTS_POLL_MS,
): EventSource<RunEvent> {
  return (send, end) => {
    let last = afterSeq;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const drain = async (): Promise<{ count: number; ended: boolean }> => {
      const events = await store.runEvents(runId, last);
      let ended = false;
      for (const event of events) {
        if (event.seq <= last) continue;
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
            await drain();
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
  };
}

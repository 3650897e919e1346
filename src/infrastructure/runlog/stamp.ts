import type { Clock } from '../../application/ports.ts';
import { RUNLOG_FORMAT_VERSION, type RunEvent, type RunEventInput } from '../../domain/run-events.ts';

/** Adds the envelope (`v`, `kind`, `ts`, `run_id`, `seq`) to an event; the envelope comes first on the line. */
export function stampEvent(event: RunEventInput, runId: string, seq: number, clock: Clock): RunEvent {
  const { kind, ...body } = event;
  return {
    v: RUNLOG_FORMAT_VERSION,
    kind,
    ts: clock.now().toISOString(),
    run_id: runId,
    seq,
    ...body,
  } as RunEvent;
}

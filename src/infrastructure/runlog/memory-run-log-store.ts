import type {
  Clock,
  ResumableRunLogs,
  RunLog,
  RunLogContents,
  RunLogStore,
  RunLogTails,
} from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent, RunEventInput } from '../../domain/run-events.ts';
import { systemClock } from '../clock.ts';
import { stampEvent } from './stamp.ts';

/** Runlogs kept in memory: for tests and for callers that do not want files. */
export class MemoryRunLogStore implements RunLogStore, ResumableRunLogs, RunLogTails {
  readonly #logs = new Map<string, RunEvent[]>();
  readonly #clock: Clock;

  constructor(clock: Clock = systemClock) {
    this.#clock = clock;
  }

  async create(runId: string): Promise<RunLog> {
    if (this.#logs.has(runId)) throw new FabricError('internal', `Run ${runId} already has a runlog.`);
    const events: RunEvent[] = [];
    this.#logs.set(runId, events);
    return this.#writer(runId, events);
  }

  async reopen(runId: string): Promise<RunLog> {
    const events = this.#logs.get(runId);
    if (!events) throw new FabricError('run_not_found', `No run ${runId}.`);
    return this.#writer(runId, events);
  }

  #writer(runId: string, events: RunEvent[]): RunLog {
    const clock = this.#clock;
    let closed = false;
    return {
      runId,
      location: `memory:${runId}`,
      async append(event: RunEventInput): Promise<RunEvent> {
        if (closed) throw new FabricError('internal', `The runlog of ${runId} is closed.`);
        const stamped = stampEvent(event, runId, events.length + 1, clock);
        events.push(stamped);
        return stamped;
      },
      async close() {
        closed = true;
      },
    };
  }

  async read(ref: string): Promise<RunLogContents> {
    const runId = ref.startsWith('memory:') ? ref.slice('memory:'.length) : ref;
    const events = this.#logs.get(runId);
    if (!events) throw new FabricError('run_not_found', `No run ${runId}.`);
    return { runId, location: `memory:${runId}`, events: [...events], torn: false };
  }

  async list(): Promise<readonly string[]> {
    return [...this.#logs.keys()].reverse();
  }

  async lastSeq(runId: string): Promise<number | null> {
    return this.#logs.get(runId)?.at(-1)?.seq ?? null;
  }
}

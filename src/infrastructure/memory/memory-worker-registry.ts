/**
 * The worker registry in memory: workers, the queue-side states of runs and cancel requests, by
 * the rules of the Postgres registry (`queue/postgres-worker-registry.ts`), with an injected
 * clock so that a heartbeat's age is whatever the caller says. For tests and single processes.
 */
import type { Clock } from '../../application/ports.ts';
import type {
  QueuedRun,
  WorkerInfo,
  WorkerRegistry,
  WorkerRow,
} from '../../application/queue/queue-ports.ts';

/** A run's row as the registry keeps it. */
export interface MemoryRunRow {
  readonly status: 'queued' | 'running' | 'failed' | 'cancelled' | 'interrupted';
  readonly error?: { readonly code: string; readonly message: string };
}

interface Worker extends WorkerInfo {
  state: WorkerRow['state'];
  readonly started: Date;
  lastHeartbeat: Date;
}

const OPEN = new Set<MemoryRunRow['status']>(['queued', 'running']);

/** A `WorkerRegistry` held in this process. */
export class MemoryWorkerRegistry implements WorkerRegistry {
  readonly #clock: Clock;
  readonly #workers = new Map<string, Worker>();
  readonly #runs = new Map<string, MemoryRunRow>();
  readonly #cancels = new Set<string>();

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async recordQueued(run: QueuedRun): Promise<void> {
    if (!this.#runs.has(run.runId)) this.#runs.set(run.runId, { status: 'queued' });
  }

  async recordTaken(runId: string): Promise<void> {
    const row = this.#runs.get(runId);
    if (row === undefined || row.status === 'queued') this.#runs.set(runId, { status: 'running' });
  }

  async recordNotStarted(
    runId: string,
    status: 'failed' | 'cancelled',
    error: { readonly code: string; readonly message: string },
  ): Promise<void> {
    const row = this.#runs.get(runId);
    if (row !== undefined && OPEN.has(row.status)) this.#runs.set(runId, { status, error: { ...error } });
  }

  async heartbeat(worker: WorkerInfo): Promise<void> {
    const known = this.#workers.get(worker.id);
    const now = this.#clock.now();
    if (known === undefined) {
      this.#workers.set(worker.id, { ...copy(worker), state: 'running', started: now, lastHeartbeat: now });
      return;
    }
    // A worker declared dead or stopped stays so.
    if (known.state !== 'running') return;
    this.#workers.set(worker.id, { ...known, ...copy(worker), lastHeartbeat: now });
  }

  async stopped(workerId: string): Promise<void> {
    const known = this.#workers.get(workerId);
    if (known === undefined) return;
    this.#workers.set(workerId, { ...known, state: 'stopped', runs: [], lastHeartbeat: this.#clock.now() });
  }

  async list(): Promise<readonly WorkerRow[]> {
    return [...this.#workers.values()]
      .sort(
        (a, b) =>
          Number(b.state === 'running') - Number(a.state === 'running') ||
          b.lastHeartbeat.getTime() - a.lastHeartbeat.getTime(),
      )
      .map(({ started, lastHeartbeat, ...worker }) => ({
        ...worker,
        started_at: started.toISOString(),
        last_heartbeat: lastHeartbeat.toISOString(),
      }));
  }

  async reapDeadWorkers(deadAfterMs: number): Promise<readonly string[]> {
    const limit = this.#clock.now().getTime() - deadAfterMs;
    const interrupted: string[] = [];
    for (const worker of this.#workers.values()) {
      if (worker.state !== 'running' || worker.lastHeartbeat.getTime() >= limit) continue;
      worker.state = 'dead';
      for (const runId of worker.runs) {
        const row = this.#runs.get(runId);
        if (row === undefined || !OPEN.has(row.status)) continue;
        this.#runs.set(runId, { status: 'interrupted' });
        interrupted.push(runId);
      }
    }
    return interrupted;
  }

  async requestCancel(runId: string): Promise<void> {
    this.#cancels.add(runId);
  }

  async cancelRequested(runIds: readonly string[]): Promise<readonly string[]> {
    return runIds.filter((runId) => this.#cancels.has(runId));
  }

  async close(): Promise<void> {}

  /** A run's row, or undefined when the registry has none. */
  run(runId: string): MemoryRunRow | undefined {
    return this.#runs.get(runId);
  }
}

function copy(worker: WorkerInfo): WorkerInfo {
  const { id, host, pid, specialists, concurrency, runs } = worker;
  return { id, host, pid, specialists: [...specialists], concurrency, runs: [...runs] };
}

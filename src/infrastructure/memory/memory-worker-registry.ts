/**
 * The worker registry in memory: workers, the queue-side states of runs and cancel requests, by
 * the rules of the Postgres registry (`queue/postgres-worker-registry.ts`), with an injected
 * clock so that a heartbeat's age is whatever the caller says. For tests and single processes.
 */
import type { Clock } from '../../application/ports.ts';
import type {
  QueuedRun,
  ReapedRun,
  RunLease,
  WorkerInfo,
  WorkerRegistry,
  WorkerRow,
} from '../../application/queue/queue-ports.ts';

/** A run's row as the registry keeps it. */
export interface MemoryRunRow {
  readonly status: 'queued' | 'running' | 'failed' | 'cancelled' | 'interrupted';
  readonly error?: { readonly code: string; readonly message: string };
  /** The lease of the worker that took it: its fencing token, and until when (ms). */
  readonly lease?: { readonly token: string; readonly expires: number; readonly jobId: string };
  /** Whether another worker may resume it, and how often one did. */
  readonly resumable?: boolean;
  readonly resumes?: number;
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
  #tokens = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  async recordQueued(run: QueuedRun): Promise<void> {
    if (!this.#runs.has(run.runId)) this.#runs.set(run.runId, { status: 'queued' });
  }

  async recordTaken(
    runId: string,
    holder: {
      readonly workerId: string;
      readonly leaseMs: number;
      readonly jobId: string;
      readonly resumable: boolean;
    },
  ): Promise<RunLease | null> {
    const row = this.#runs.get(runId);
    if (row !== undefined && row.status !== 'queued') return null;
    const token = String(++this.#tokens);
    const expires = this.#clock.now().getTime() + holder.leaseMs;
    const resumes = row?.resumes ?? 0;
    this.#runs.set(runId, {
      status: 'running',
      lease: { token, expires, jobId: holder.jobId },
      resumable: holder.resumable,
      resumes,
    });
    return { runId, token, resumes };
  }

  async recordNotStarted(
    lease: RunLease,
    status: 'failed' | 'cancelled' | 'interrupted',
    error: { readonly code: string; readonly message: string },
  ): Promise<void> {
    const row = this.#runs.get(lease.runId);
    if (row !== undefined && OPEN.has(row.status) && row.lease?.token === lease.token)
      this.#runs.set(lease.runId, { status, error: { ...error } });
  }

  async heartbeat(worker: WorkerInfo): Promise<boolean> {
    const known = this.#workers.get(worker.id);
    const now = this.#clock.now();
    if (known === undefined) {
      this.#workers.set(worker.id, { ...copy(worker), state: 'running', started: now, lastHeartbeat: now });
      return true;
    }
    // A worker declared dead or stopped stays so: it registers again under a new id.
    if (known.state !== 'running') return false;
    this.#workers.set(worker.id, { ...known, ...copy(worker), lastHeartbeat: now });
    return true;
  }

  async renewLeases(
    _workerId: string,
    leases: readonly RunLease[],
    leaseMs: number,
  ): Promise<readonly string[]> {
    const renewed: string[] = [];
    const now = this.#clock.now().getTime();
    const expires = now + leaseMs;
    for (const lease of leases) {
      const row = this.#runs.get(lease.runId);
      if (row?.lease?.token !== lease.token) continue;
      // An expired lease is lost even before a reaper marks its run; an ended run is held.
      if (row.status !== 'running' || row.lease.expires < now) {
        if (row.status !== 'interrupted' && !OPEN.has(row.status)) renewed.push(lease.runId);
        continue;
      }
      this.#runs.set(lease.runId, { ...row, lease: { ...row.lease, expires } });
      renewed.push(lease.runId);
    }
    return renewed;
  }

  async stopped(workerId: string): Promise<void> {
    const known = this.#workers.get(workerId);
    if (known === undefined) return;
    this.#workers.set(workerId, { ...known, state: 'stopped', runs: [], lastHeartbeat: this.#clock.now() });
  }

  async queuedCount(): Promise<number> {
    return [...this.#runs.values()].filter((row) => row.status === 'queued').length;
  }

  async aliveCount(): Promise<number> {
    return [...this.#workers.values()].filter((worker) => worker.state === 'running').length;
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

  async reapDeadWorkers(deadAfterMs: number, maxResumes: number): Promise<readonly ReapedRun[]> {
    const now = this.#clock.now().getTime();
    for (const worker of this.#workers.values())
      if (worker.state === 'running' && worker.lastHeartbeat.getTime() < now - deadAfterMs)
        worker.state = 'dead';
    const interrupted: ReapedRun[] = [];
    for (const [runId, row] of this.#runs) {
      if (row.status !== 'running' || row.lease === undefined || row.lease.expires >= now) continue;
      const resumes = row.resumes ?? 0;
      const resumed = row.resumable === true && resumes < maxResumes;
      this.#runs.set(
        runId,
        resumed
          ? { status: 'queued', resumable: true, resumes: resumes + 1 }
          : { status: 'interrupted', resumes },
      );
      interrupted.push({ runId, jobId: row.lease.jobId, resumed });
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

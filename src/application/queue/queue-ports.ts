/**
 * The run queue's ports: runs requested over HTTP wait in a queue until a
 * `fabric worker` on some host takes one, runs it through its own Fabric and reports back
 * through the control plane. Adapters live in `src/infrastructure/queue/`. Nothing here does I/O.
 */
import type { BatteryTaskSpec } from '../battery/battery-types.ts';
import type { CellOutcome } from '../battery/cell-executor.ts';

/** A run waiting for a worker: what `POST /v1/runs` accepted, with the id it answered. */
export interface QueuedRun {
  readonly runId: string;
  readonly specialist: string;
  readonly task: string;
  /** A path every worker can reach (a shared mount); none: the specialist's default. */
  readonly workspace?: string | undefined;
  readonly model?: string | undefined;
  readonly maxSteps?: number | undefined;
  /** Recorded in the run's `run_start` (a battery cell's battery, task, model, repeat). */
  readonly tags?: Readonly<Record<string, string>> | undefined;
  /** Set when the run is a battery cell: the worker also runs its checks and reports back. */
  readonly cell?: QueuedCell | undefined;
}

/** A battery cell's part of a queued run. */
export interface QueuedCell {
  /** The battery's workspace archive (`CellReports.putArchive`); none: the battery has no workspace. */
  readonly archive?: string | undefined;
  /** The cell's task with its `expect` checks, which run on the worker after the run. */
  readonly spec: BatteryTaskSpec;
}

/**
 * Where battery cells meet their workers: the battery's workspace, archived once, and each
 * cell's outcome (its run and checks), reported by the worker that ran it.
 */
export interface CellReports {
  putArchive(id: string, archive: Uint8Array): Promise<void>;
  /** The archive's bytes; throws when there is no such archive. */
  archive(id: string): Promise<Uint8Array>;
  report(runId: string, outcome: CellOutcome): Promise<void>;
  /** The outcome a worker reported for the run, or null while none has. */
  outcome(runId: string): Promise<CellOutcome | null>;
}

/** A run a worker took from the queue; `settle` tells the queue it is done with it. */
export interface TakenRun {
  readonly run: QueuedRun;
  /** The queue's own id of the job (for logs). */
  readonly jobId: string;
}

/** How a taken run went, for the queue's bookkeeping (the control plane holds the run itself). */
export type TakenRunOutcome = 'ended' | 'not_started';

/**
 * The queue. A job is taken once: a worker that dies after taking it does not hand it back
 * (its run is `interrupted`, never silently retried: tools have side effects); a job nobody
 * took waits for any worker that serves its specialist.
 */
export interface RunQueue {
  /** Makes the queue ready (its schema, a queue per specialist). Idempotent. */
  prepare(specialists: readonly string[]): Promise<void>;
  enqueue(run: QueuedRun): Promise<void>;
  /** Takes up to `limit` waiting runs of these specialists, oldest first. */
  take(specialists: readonly string[], limit: number): Promise<readonly TakenRun[]>;
  settle(taken: TakenRun, outcome: TakenRunOutcome): Promise<void>;
  /**
   * Jobs taken more than `olderThanMs` ago whose run is still `queued`: no worker ever recorded
   * the take (the answer of its fetch was lost with its connection, or it died in between), so
   * nothing ran. Each is failed and sent again, once, for another worker to take. Returns their
   * run ids. Adapters that cannot lose a fetch's answer (in memory) leave it out.
   */
  requeueOrphans?(olderThanMs: number): Promise<readonly string[]>;
  close(): Promise<void>;
}

/** A worker as it reports itself. */
export interface WorkerInfo {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly specialists: readonly string[];
  readonly concurrency: number;
  /** The runs it has in progress. */
  readonly runs: readonly string[];
}

/** A worker as the registry shows it. */
export interface WorkerRow extends WorkerInfo {
  /** `running`; `stopped` after a clean shutdown; `dead` once its heartbeat stopped. */
  readonly state: 'running' | 'stopped' | 'dead';
  readonly started_at: string;
  readonly last_heartbeat: string;
}

/**
 * A worker's hold on a run, recorded on the run's own row when it takes it: the worker, a
 * fencing token that grows with every take (a database sequence), and an expiry the worker's
 * heartbeat pushes on. Every write the worker makes for the run names the token, and the
 * database refuses it once the row holds another token or no longer says `running`: a worker
 * cut off past its lease writes nothing more, whatever its backlog.
 */
export interface RunLease {
  readonly runId: string;
  /** The fencing token (a bigint, as text). */
  readonly token: string;
  /**
   * How many times the run was handed on from a worker that died (its lease expired): above 0,
   * the run is resumed from its runlog (SPEC §18), not started. Absent: 0.
   */
  readonly resumes?: number;
}

/** A run the reaper found with its lease expired: `resumed` went back to the queue to be resumed. */
export interface ReapedRun {
  readonly runId: string;
  readonly jobId: string | null;
  /** Sent back to the queue for another worker to resume (`worker.max_resumes`); else `interrupted`. */
  readonly resumed: boolean;
}

/**
 * Where workers report themselves and where runs' queue-side states are kept: `queued` rows,
 * leases, cancel requests, runs whose lease expired marked `interrupted`. Times are the
 * database's clock, so hosts' clocks need not agree.
 */
export interface WorkerRegistry {
  /** Records a run the server queued, as a `queued` row of the control plane. */
  recordQueued(run: QueuedRun): Promise<void>;
  /**
   * A worker took the run: its row goes `running` with a lease for `leaseMs` and a new token
   * (the mirror fills in the rest). Null when the row is no longer `queued` (cancelled,
   * interrupted, ended): the run must not start.
   */
  recordTaken(
    runId: string,
    holder: {
      readonly workerId: string;
      readonly leaseMs: number;
      readonly jobId: string;
      /** Whether another worker may resume it should this one die (not a battery cell). */
      readonly resumable: boolean;
    },
  ): Promise<RunLease | null>;
  /**
   * The run could not start on the worker (no model, a pack that fails: `failed`), or was
   * cancelled before it started (`cancelled`): its row says so, and why, if the lease still holds.
   */
  recordNotStarted(
    lease: RunLease,
    status: 'failed' | 'cancelled' | 'interrupted',
    error: { readonly code: string; readonly message: string },
  ): Promise<void>;
  /**
   * Writes the worker's heartbeat. False when the registry has this id `dead` or `stopped`: the
   * worker must register again under a new id (its old leases are gone).
   */
  heartbeat(worker: WorkerInfo): Promise<boolean>;
  /**
   * Pushes these leases' expiry `leaseMs` on from the database's now, where they still hold.
   * Returns the run ids still held (renewed, or ended by their own run_end: a battery cell's
   * checks run after it); the others were lost (reaped, or taken again).
   */
  renewLeases(workerId: string, leases: readonly RunLease[], leaseMs: number): Promise<readonly string[]>;
  stopped(workerId: string): Promise<void>;
  list(): Promise<readonly WorkerRow[]>;
  /** Runs queued and not yet taken by a worker: the queue's depth (a worker's /metrics). */
  queuedCount(): Promise<number>;
  /** Workers whose heartbeat is current (`running`): a count, cheap enough for every scrape. */
  aliveCount(): Promise<number>;
  /**
   * Workers silent for longer than `deadAfterMs` are `dead`; runs whose lease expired (their
   * worker stopped renewing it, whatever its state) go back to `queued` to be resumed by another
   * worker when they are resumable and were resumed fewer than `maxResumes` times (their job is
   * then an orphan `RunQueue.requeueOrphans` sends again), else become `interrupted`. Returns
   * those runs. Idempotent; any process may run it (the server, every worker).
   */
  reapDeadWorkers(deadAfterMs: number, maxResumes: number): Promise<readonly ReapedRun[]>;
  requestCancel(runId: string): Promise<void>;
  /** Of these runs, the ones someone asked to cancel. */
  cancelRequested(runIds: readonly string[]): Promise<readonly string[]>;
  close(): Promise<void>;
}

/** A worker's log: a line, and the run it is about (a JSON log's `run_id`, SPEC §21). */
export type WorkerLog = (line: string, fields?: { readonly run_id?: string }) => void;

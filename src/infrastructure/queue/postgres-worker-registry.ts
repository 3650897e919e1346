import type {
  QueuedRun,
  ReapedRun,
  RunLease,
  WorkerInfo,
  WorkerRegistry,
  WorkerRow,
} from '../../application/queue/queue-ports.ts';
import { jsonParam } from '../control/json-param.ts';
import type { SqlExecutor } from '../control/sql-executor.ts';

interface RawWorker {
  id: string;
  host: string;
  pid: number;
  specialists: string[];
  concurrency: number;
  runs: string[];
  state: WorkerRow['state'];
  started_at: Date | string;
  last_heartbeat: Date | string;
}

// Silent workers go `dead`, and every run whose lease expired is handed on or ended, in one
// statement on the database's clock (a data-modifying CTE runs whether or not it is read). The
// lease, not the worker's list of runs, decides: a run taken a moment before its worker died is on
// no heartbeat yet, but its lease is on its row. A resumable run resumed fewer than $2 times
// (worker.max_resumes) goes back to \`queued\`: its job, still active, is then an orphan that
// requeueOrphans sends again, and the worker that takes it resumes the run from its runlog.
const REAP = `
with dead as (
  update control.workers set state = 'dead'
  where state = 'running' and last_heartbeat < now() - make_interval(secs => $1::double precision)
  returning id
),
expired as (
  select id, lease_job is not null and resumable and resumes < $2::integer as resume
  from control.runs
  where status = 'running' and lease_expires is not null and lease_expires < now()
  for update
)
update control.runs r set
  status = case when e.resume then 'queued' else 'interrupted' end,
  resumes = case when e.resume then r.resumes + 1 else r.resumes end,
  ended_at = case when e.resume then r.ended_at else coalesce(r.ended_at, now()) end,
  updated_at = now(),
  error = case when e.resume then r.error else coalesce(r.error, jsonb_build_object('code', 'run_interrupted',
    'message', 'Its worker stopped renewing its lease (died, or cut off from the database).' ||
      case when r.resumable and $2::integer > 0
        then ' It was resumed ' || case when r.resumes = 1 then 'once' else r.resumes || ' times' end ||
          ' by other workers already (worker.max_resumes ' || $2::integer || ').'
        else '' end)) end
from expired e
where r.id = e.id
returning r.id, r.lease_job, e.resume`;

/**
 * The workers and the queue-side states of runs, in the control schema (migrations 5 and 9). Every
 * time is the database's `now()`, so the hosts' clocks need not agree.
 */
export class PostgresWorkerRegistry implements WorkerRegistry {
  readonly #db: SqlExecutor;

  constructor(db: SqlExecutor) {
    this.#db = db;
  }

  async recordQueued(run: QueuedRun): Promise<void> {
    await this.#db.query(
      `insert into control.runs (id, specialist, task, status) values ($1, $2, $3, 'queued')
       on conflict (id) do nothing`,
      [run.runId, run.specialist, run.task],
    );
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
    // The mirror fills in the rest from run_start; it never changes a status before run_end.
    const rows = await this.#db.query<{ token: string | number; resumes: number }>(
      `insert into control.runs as t (id, status, lease_worker, lease_token, lease_expires, lease_job, resumable)
       values ($1, 'running', $2, nextval('control.run_lease_seq'),
         now() + make_interval(secs => $3::double precision), $4, $5)
       on conflict (id) do update set status = 'running', updated_at = now(),
         lease_worker = excluded.lease_worker, lease_token = excluded.lease_token,
         lease_expires = excluded.lease_expires, lease_job = excluded.lease_job,
         resumable = excluded.resumable
       where t.status = 'queued'
       returning lease_token::text as token, resumes`,
      [runId, holder.workerId, holder.leaseMs / 1000, holder.jobId, holder.resumable],
    );
    const row = rows[0];
    return row === undefined ? null : { runId, token: String(row.token), resumes: Number(row.resumes) };
  }

  async recordNotStarted(
    lease: RunLease,
    status: 'failed' | 'cancelled' | 'interrupted',
    error: { code: string; message: string },
  ): Promise<void> {
    await this.#db.query(
      `update control.runs set status = $3, error = $4::text::jsonb, ended_at = now(), updated_at = now(),
         lease_expires = null
       where id = $1 and lease_token = $2::bigint and status in ('queued', 'running')`,
      [lease.runId, lease.token, status, jsonParam(error)],
    );
  }

  async heartbeat(worker: WorkerInfo): Promise<boolean> {
    // A worker the others declared dead (or one that stopped) is not revived under its old id:
    // its leases are gone, and it registers again as a new worker.
    const rows = await this.#db.query<{ state: string }>(
      `insert into control.workers as w (id, host, pid, specialists, concurrency, runs)
       values ($1, $2, $3, $4::text::jsonb, $5, $6::text::jsonb)
       on conflict (id) do update set runs = excluded.runs, last_heartbeat = now(),
         specialists = excluded.specialists, concurrency = excluded.concurrency
       where w.state = 'running'
       returning state`,
      [
        worker.id,
        worker.host,
        worker.pid,
        jsonParam(worker.specialists),
        worker.concurrency,
        jsonParam(worker.runs),
      ],
    );
    return rows.length > 0;
  }

  async renewLeases(
    workerId: string,
    leases: readonly RunLease[],
    leaseMs: number,
  ): Promise<readonly string[]> {
    if (leases.length === 0) return [];
    // A run that ended by its own run_end is still this worker's job (a battery cell's checks
    // run after it): held. One interrupted, or another take's, is lost.
    const rows = await this.#db.query<{ id: string }>(
      `update control.runs as t set lease_expires = now() + make_interval(secs => $2::double precision),
         lease_worker = $3
       from jsonb_to_recordset($1::text::jsonb) as l(run_id text, token bigint)
       where t.id = l.run_id and t.lease_token = l.token
         and (t.status = 'running' and t.lease_expires > now()
           or t.status in ('succeeded', 'failed', 'max_steps', 'cancelled', 'awaiting_approval'))
       returning t.id`,
      [
        jsonParam(leases.map((lease) => ({ run_id: lease.runId, token: lease.token }))),
        leaseMs / 1000,
        workerId,
      ],
    );
    return rows.map((row) => row.id);
  }

  async stopped(workerId: string): Promise<void> {
    await this.#db.query(
      `update control.workers set state = 'stopped', stopped_at = now(), runs = '[]', last_heartbeat = now()
       where id = $1`,
      [workerId],
    );
  }

  async list(): Promise<readonly WorkerRow[]> {
    const rows = await this.#db.query<RawWorker>(
      `select id, host, pid, specialists, concurrency, runs, state, started_at, last_heartbeat
       from control.workers order by state = 'running' desc, last_heartbeat desc limit 1000`,
    );
    return rows.map((row) => ({
      ...row,
      started_at: iso(row.started_at),
      last_heartbeat: iso(row.last_heartbeat),
    }));
  }

  async queuedCount(): Promise<number> {
    const rows = await this.#db.query<{ n: string }>(
      `select count(*)::text as n from control.runs where status = 'queued'`,
    );
    return Number(rows[0]?.n ?? 0);
  }

  async aliveCount(): Promise<number> {
    const rows = await this.#db.query<{ n: string }>(
      `select count(*)::text as n from control.workers where state = 'running'`,
    );
    return Number(rows[0]?.n ?? 0);
  }

  async reapDeadWorkers(deadAfterMs: number, maxResumes: number): Promise<readonly ReapedRun[]> {
    const rows = await this.#db.query<{ id: string; lease_job: string | null; resume: boolean }>(REAP, [
      deadAfterMs / 1000,
      maxResumes,
    ]);
    return rows.map((row) => ({ runId: row.id, jobId: row.lease_job, resumed: row.resume }));
  }

  async requestCancel(runId: string): Promise<void> {
    await this.#db.query('insert into control.run_cancels (run_id) values ($1) on conflict do nothing', [
      runId,
    ]);
  }

  async cancelRequested(runIds: readonly string[]): Promise<readonly string[]> {
    if (runIds.length === 0) return [];
    const rows = await this.#db.query<{ run_id: string }>(
      'select run_id from control.run_cancels where run_id in (select jsonb_array_elements_text($1::text::jsonb))',
      [jsonParam(runIds)],
    );
    return rows.map((row) => row.run_id);
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}

function iso(value: Date | string): string {
  return value instanceof Date ? value.toISOString() : new Date(value).toISOString();
}

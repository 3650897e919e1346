import type {
  QueuedRun,
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

// Runs of a dead worker are `interrupted` in one statement: the worker goes `dead` and its
// runs still `running` (or taken and not started: their row still says `queued`) follow.
const REAP = `
with dead as (
  update control.workers set state = 'dead'
  where state = 'running' and last_heartbeat < now() - make_interval(secs => $1::double precision)
  returning runs
)
update control.runs set status = 'interrupted', updated_at = now()
where status in ('running', 'queued')
  and id in (select jsonb_array_elements_text(runs) from dead)
returning id`;

/**
 * The workers and the queue-side states of runs, in the control schema (migration 5). Every
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

  async recordTaken(runId: string): Promise<void> {
    // The mirror fills in the rest from run_start; it never changes a status before run_end.
    await this.#db.query(
      `insert into control.runs (id, status) values ($1, 'running')
       on conflict (id) do update set status = 'running', updated_at = now()
       where control.runs.status = 'queued'`,
      [runId],
    );
  }

  async recordNotStarted(
    runId: string,
    status: 'failed' | 'cancelled',
    error: { code: string; message: string },
  ): Promise<void> {
    await this.#db.query(
      `update control.runs set status = $2, error = $3::text::jsonb, ended_at = now(), updated_at = now()
       where id = $1 and status in ('queued', 'running')`,
      [runId, status, jsonParam(error)],
    );
  }

  async heartbeat(worker: WorkerInfo): Promise<void> {
    await this.#db.query(
      `insert into control.workers (id, host, pid, specialists, concurrency, runs)
       values ($1, $2, $3, $4::text::jsonb, $5, $6::text::jsonb)
       on conflict (id) do update set runs = excluded.runs, last_heartbeat = now(),
         specialists = excluded.specialists, concurrency = excluded.concurrency
       where control.workers.state = 'running'`,
      [
        worker.id,
        worker.host,
        worker.pid,
        jsonParam(worker.specialists),
        worker.concurrency,
        jsonParam(worker.runs),
      ],
    );
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

  async reapDeadWorkers(deadAfterMs: number): Promise<readonly string[]> {
    const rows = await this.#db.query<{ id: string }>(REAP, [deadAfterMs / 1000]);
    return rows.map((row) => row.id);
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

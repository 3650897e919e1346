import type { ControlRunRow, MirroredRun, ModelCallRecord } from '../../application/control/control-ports.ts';
import type { BackendKind } from '../../application/ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { SqlQuery } from './sql-executor.ts';

// Reads of single runs: `fabric runs`, the HTTP API, and the tests that compare rows with runlogs.
// Timestamps are read as Date (both drivers) and given back as ISO strings, like the runlog.

const RUN_COLUMNS = `id, specialist, task, model, backend, status, started_at, ended_at, steps,
  prompt_tokens, completion_tokens, total_tokens, duration_ms, payload, error`;

type RunRecord = Omit<ControlRunRow, 'started_at' | 'ended_at'> & {
  started_at: Date | null;
  ended_at: Date | null;
};

/** Runs, newest first. */
export async function queryRuns(db: SqlQuery, limit: number): Promise<ControlRunRow[]> {
  const rows = await db.query<RunRecord>(
    `select ${RUN_COLUMNS} from control.runs order by started_at desc nulls last, id desc limit $1`,
    [Math.max(0, Math.floor(limit))],
  );
  return rows.map(toRun);
}

/** One run, or null. */
export async function queryRun(db: SqlQuery, runId: string): Promise<ControlRunRow | null> {
  const rows = await db.query<RunRecord>(`select ${RUN_COLUMNS} from control.runs where id = $1`, [runId]);
  return rows[0] === undefined ? null : toRun(rows[0]);
}

/** A run's events rebuilt as runlog lines. */
export async function queryRunEvents(db: SqlQuery, runId: string, afterSeq = 0): Promise<RunEvent[]> {
  // seq > $2 rides the (run_id, seq) key: a stream's poll reads only what is new.
  const rows = await db.query<{ seq: number; kind: string; ts: Date; body: Record<string, unknown> }>(
    'select seq, kind, ts, body from control.run_events where run_id = $1 and seq > $2 order by seq',
    [runId, afterSeq],
  );
  return rows.map(
    (row) =>
      ({ ...row.body, kind: row.kind, ts: iso(row.ts), run_id: runId, seq: row.seq }) as unknown as RunEvent,
  );
}

/** A run's model calls, in seq order. */
export async function queryModelCalls(db: SqlQuery, runId: string): Promise<ModelCallRecord[]> {
  const rows = await db.query<Omit<ModelCallRecord, 'ts' | 'tool'> & { ts: Date; tool: BackendKind }>(
    `select run_id, seq, step, tool, model, latency_ms, success, error_reason, prompt_tokens,
       completion_tokens, total_tokens, reasoning_tokens, reasoning_chars, ts
     from control.agent_run where run_id = $1 order by seq`,
    [runId],
  );
  return rows.map((row) => ({ ...row, ts: iso(row.ts) }));
}

/** How many events the store holds for each run it knows. */
export async function queryMirroredRuns(db: SqlQuery): Promise<Map<string, MirroredRun>> {
  const rows = await db.query<{ run_id: string; status: string; events: number; complete: boolean }>(
    `select r.id as run_id, r.status, coalesce(e.events, 0)::integer as events,
       coalesce(e.ended and e.events = e.max_seq, false) as complete
     from control.runs r
     left join (
       select run_id, count(*) as events, max(seq) as max_seq, bool_or(kind = 'run_end') as ended
       from control.run_events group by run_id
     ) e on e.run_id = r.id`,
  );
  return new Map(
    rows.map((row) => [
      row.run_id,
      { runId: row.run_id, events: row.events, status: row.status, complete: row.complete },
    ]),
  );
}

function toRun(row: RunRecord): ControlRunRow {
  return {
    ...row,
    started_at: row.started_at === null ? null : iso(row.started_at),
    ended_at: row.ended_at === null ? null : iso(row.ended_at),
  };
}

function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

import type {
  CallTotals,
  HealthRow,
  InsightsData,
  TimeWindow,
  UsageRow,
} from '../../application/control/control-ports.ts';
import type { SqlQuery } from './sql-executor.ts';

// The exports' SQL. Every query reads control.agent_run (or control.runs) over [$1, $2), which
// the (ts), (tool, ts) and (model, ts) indexes serve. Days are UTC days. Counts are cast to
// integer and sums to float8 so both drivers return plain numbers (bigint and numeric come
// back as strings from `postgres`). Text is ordered `collate "C"`: a server's default collation
// and PGlite's differ, and the exports must not.

const IN_WINDOW = 'ts >= $1::timestamptz and ts < $2::timestamptz';
const DAY = `to_char(ts at time zone 'UTC', 'YYYY-MM-DD')`;

function bounds(window: TimeWindow): [string, string] {
  return [window.from.toISOString(), window.to.toISOString()];
}

/** Calls and tokens per day and model. */
export function queryUsage(db: SqlQuery, window: TimeWindow): Promise<UsageRow[]> {
  return db.query<UsageRow>(
    `select ${DAY} as day, model,
       count(*)::integer as calls,
       (count(*) filter (where success))::integer as successes,
       (count(*) filter (where not success))::integer as failures,
       coalesce(sum(prompt_tokens), 0)::float8 as prompt_tokens,
       coalesce(sum(completion_tokens), 0)::float8 as completion_tokens,
       coalesce(sum(total_tokens), 0)::float8 as total_tokens
     from control.agent_run where ${IN_WINDOW}
     group by 1, 2 order by 1, model collate "C"`,
    bounds(window),
  );
}

/** Outcome and latency per backend kind and day. Latency percentiles skip failed calls (no latency). */
export function queryHealth(db: SqlQuery, window: TimeWindow): Promise<HealthRow[]> {
  return db.query<HealthRow>(
    `select tool, ${DAY} as day,
       count(*)::integer as calls,
       (count(*) filter (where success))::integer as successes,
       (count(*) filter (where not success))::integer as failures,
       ((count(*) filter (where not success))::float8 / count(*))::float8 as error_rate,
       avg(latency_ms)::float8 as mean_latency_ms,
       (percentile_cont(0.95) within group (order by latency_ms))::float8 as p95_latency_ms
     from control.agent_run where ${IN_WINDOW}
     group by 1, 2 order by tool collate "C", 2`,
    bounds(window),
  );
}

/** Calls, successes and failures in the window. */
export async function queryCallTotals(db: SqlQuery, window: TimeWindow): Promise<CallTotals> {
  const rows = await db.query<CallTotals>(
    `select count(*)::integer as total_calls,
       (count(*) filter (where success))::integer as successes,
       (count(*) filter (where not success))::integer as failures
     from control.agent_run where ${IN_WINDOW}`,
    bounds(window),
  );
  return rows[0] ?? { total_calls: 0, successes: 0, failures: 0 };
}

/** Top models by calls, the slowest model, the commonest error reasons, runs by status. */
export async function queryInsights(db: SqlQuery, window: TimeWindow, top = 5): Promise<InsightsData> {
  const params = [...bounds(window), top];
  const topModels = await db.query<{ model: string; calls: number; total_tokens: number }>(
    `select model, count(*)::integer as calls, coalesce(sum(total_tokens), 0)::float8 as total_tokens
     from control.agent_run where ${IN_WINDOW}
     group by model order by calls desc, model collate "C" limit $3`,
    params,
  );
  const slowest = await db.query<{ model: string; mean_latency_ms: number; calls: number }>(
    `select model, avg(latency_ms)::float8 as mean_latency_ms, count(*)::integer as calls
     from control.agent_run where ${IN_WINDOW} and latency_ms is not null
     group by model order by mean_latency_ms desc, model collate "C" limit 1`,
    bounds(window),
  );
  const reasons = await db.query<{ reason: string; count: number }>(
    `select coalesce(error_reason, 'unknown') collate "C" as reason, count(*)::integer as count
     from control.agent_run where ${IN_WINDOW} and not success
     group by 1 order by count(*) desc, 1 limit $3`,
    params,
  );
  // A run belongs to the window it started in; a run seen before its run_start has no start yet.
  const statuses = await db.query<{ status: string; runs: number }>(
    `select status, count(*)::integer as runs from control.runs
     where coalesce(started_at, updated_at) >= $1::timestamptz
       and coalesce(started_at, updated_at) < $2::timestamptz
     group by status order by runs desc, status collate "C"`,
    bounds(window),
  );
  return {
    top_models: topModels,
    slowest_model: slowest[0] ?? null,
    error_reasons: reasons,
    runs_by_status: statuses,
  };
}

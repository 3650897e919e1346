import type { ControlBatch, ControlWriteCounts } from '../../application/control-ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

// Each statement takes its rows as one JSON array ($1) expanded by jsonb_to_recordset: one
// round trip per table whatever the batch size, and the same text on both drivers.

// A run seen before its run_start (the store came back mid-run) still gets a row; run_start
// fills it in later, through the mirror or through sync.
const ENSURE_RUNS = `insert into control.runs (id, started_at)
  select r.run_id, min(r.ts) from jsonb_to_recordset($1::text::jsonb) as r(run_id text, ts timestamptz)
  group by r.run_id
  on conflict (id) do nothing`;

// Leaves status alone: the run_end may have been written first (sync after a partial mirror).
const UPSERT_RUN_START = `insert into control.runs (id, specialist, task, model, backend, started_at)
  select r.run_id, r.specialist, r.task, r.model, r.backend, r.ts
  from jsonb_to_recordset($1::text::jsonb)
    as r(run_id text, specialist text, task text, model text, backend text, ts timestamptz)
  on conflict (id) do update set specialist = excluded.specialist, task = excluded.task,
    model = excluded.model, backend = excluded.backend, started_at = excluded.started_at,
    updated_at = now()`;

const UPSERT_RUN_END = `insert into control.runs (id, status, ended_at, steps, prompt_tokens,
    completion_tokens, total_tokens, duration_ms, payload, error)
  select r.run_id, r.status, r.ts, r.steps, r.prompt_tokens, r.completion_tokens, r.total_tokens,
    r.duration_ms, r.payload, r.error
  from jsonb_to_recordset($1::text::jsonb) as r(run_id text, status text, ts timestamptz, steps integer,
    prompt_tokens integer, completion_tokens integer, total_tokens integer, duration_ms integer,
    payload jsonb, error jsonb)
  on conflict (id) do update set status = excluded.status, ended_at = excluded.ended_at,
    steps = excluded.steps, prompt_tokens = excluded.prompt_tokens,
    completion_tokens = excluded.completion_tokens, total_tokens = excluded.total_tokens,
    duration_ms = excluded.duration_ms, payload = excluded.payload, error = excluded.error,
    updated_at = now()`;

const INSERT_EVENTS = `insert into control.run_events (run_id, seq, kind, ts, body)
  select r.run_id, r.seq, r.kind, r.ts, r.body
  from jsonb_to_recordset($1::text::jsonb)
    as r(run_id text, seq integer, kind text, ts timestamptz, body jsonb)
  on conflict (run_id, seq) do nothing
  returning seq`;

const INSERT_CALLS = `insert into control.agent_run (run_id, seq, step, tool, model, latency_ms, success,
    error_reason, prompt_tokens, completion_tokens, total_tokens, ts)
  select r.run_id, r.seq, r.step, r.tool, r.model, r.latency_ms, r.success, r.error_reason,
    r.prompt_tokens, r.completion_tokens, r.total_tokens, r.ts
  from jsonb_to_recordset($1::text::jsonb) as r(run_id text, seq integer, step integer, tool text,
    model text, latency_ms integer, success boolean, error_reason text, prompt_tokens integer,
    completion_tokens integer, total_tokens integer, ts timestamptz)
  on conflict (run_id, seq) do nothing
  returning seq`;

/** Writes a batch; the caller runs it in a transaction. Returns the rows actually inserted. */
export async function writeBatch(tx: SqlQuery, batch: ControlBatch): Promise<ControlWriteCounts> {
  if (batch.events.length === 0 && batch.modelCalls.length === 0) return { events: 0, modelCalls: 0 };
  const starts = new Map<string, Record<string, unknown>>();
  const ends = new Map<string, Record<string, unknown>>();
  for (const event of batch.events) {
    if (event.kind === 'run_start') {
      const { specialist, task, model, backend } = event;
      starts.set(event.run_id, { run_id: event.run_id, ts: event.ts, specialist, task, model, backend });
    } else if (event.kind === 'run_end') {
      ends.set(event.run_id, {
        run_id: event.run_id,
        ts: event.ts,
        status: event.status,
        steps: event.steps,
        prompt_tokens: event.usage.prompt_tokens,
        completion_tokens: event.usage.completion_tokens,
        total_tokens: event.usage.total_tokens,
        duration_ms: Math.round(event.duration_ms),
        payload: event.payload,
        error: event.error,
      });
    }
  }
  const seen = [...batch.events, ...batch.modelCalls].map((row) => ({ run_id: row.run_id, ts: row.ts }));
  await tx.query(ENSURE_RUNS, [jsonParam(seen)]);
  if (starts.size > 0) await tx.query(UPSERT_RUN_START, [jsonParam([...starts.values()])]);
  if (ends.size > 0) await tx.query(UPSERT_RUN_END, [jsonParam([...ends.values()])]);
  const events =
    batch.events.length === 0 ? [] : await tx.query(INSERT_EVENTS, [jsonParam(batch.events.map(eventRow))]);
  const calls =
    batch.modelCalls.length === 0 ? [] : await tx.query(INSERT_CALLS, [jsonParam(batch.modelCalls)]);
  return { events: events.length, modelCalls: calls.length };
}

/** The envelope goes to columns; everything else (`v` included) is the body. */
function eventRow(event: RunEvent): Record<string, unknown> {
  const { run_id, seq, kind, ts, ...body } = event;
  return { run_id, seq, kind, ts, body };
}

import type { ControlBatch, ControlWriteCounts } from '../../application/control/control-ports.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

// The whole batch is ONE statement: data-modifying CTEs run as a unit, so the batch is atomic
// without a transaction around it, costs one round trip, and runs the same on both drivers.
// Its rows travel as one JSON document ($1), expanded by jsonb_to_recordset.
//
// A run gets one row per batch, merged from everything the batch says about it: two inserts
// into one table in one statement would touch the same row twice, which Postgres refuses.
// - A run seen before its run_start (the store came back mid-run) still gets a row; run_start
//   fills it in later, through the mirror or through sync.
// - run_start leaves status alone, and run_end the start fields: either may come first (sync
//   after a partial mirror). So the update takes each group of columns from the batch only when
//   the batch has that event, and leaves a run the batch merely mentions untouched.
// - A resumed run (SPEC §18) goes on past its run_end: a run_resumed after the batch's last
//   run_end for the run (or with none) sets the row back to `running` (no end, no outcome) at
//   once, and counts the resume — once per run_resumed the store did not hold yet, so a sync that
//   sends it again counts nothing. A fenced run's resume is the reaper's hand-on, counted by it.
// - A fenced run (a queue worker's, under its lease: issue 26) is written only while its row
//   holds that lease token and says `running`: the row is updated (locked, and its condition
//   checked on the latest version, so a reaper that committed first wins), and its events and
//   calls go in only when that update happened. A zombie worker's backlog writes nothing.
const WRITE_BATCH = `with batch as (select $1::text::jsonb as doc),
seen as (
  select r.run_id, min(r.ts) as ts
  from batch, jsonb_to_recordset(batch.doc->'seen') as r(run_id text, ts timestamptz)
  group by r.run_id
),
starts as (
  select r.* from batch, jsonb_to_recordset(batch.doc->'starts')
    as r(run_id text, specialist text, task text, model text, backend text, ts timestamptz)
),
ends as (
  select r.* from batch, jsonb_to_recordset(batch.doc->'ends')
    as r(run_id text, status text, ts timestamptz, steps integer, prompt_tokens integer,
      completion_tokens integer, total_tokens integer, duration_ms integer, payload jsonb, error jsonb)
),
reopens as (
  select r.* from batch, jsonb_to_recordset(batch.doc->'reopens') as r(run_id text)
),
resumed as (
  select r.run_id, count(*)::integer as n
  from batch, jsonb_to_recordset(batch.doc->'resumed') as r(run_id text, seq integer)
  where not exists (select 1 from control.run_events x where x.run_id = r.run_id and x.seq = r.seq)
  group by r.run_id
),
fences as (
  select r.* from batch, jsonb_to_recordset(batch.doc->'fences') as r(run_id text, token bigint)
),
merged as (
  select seen.run_id, s.run_id is not null as has_start, e.run_id is not null as has_end, f.token as fence,
    o.run_id is not null as has_reopen, coalesce(n.n, 0) as new_resumes,
    s.specialist, s.task, s.model, s.backend, coalesce(s.ts, seen.ts) as started_at,
    coalesce(e.status, 'running') as status, e.ts as ended_at, e.steps, e.prompt_tokens,
    e.completion_tokens, e.total_tokens, e.duration_ms, e.payload, e.error
  from seen
  left join starts s on s.run_id = seen.run_id
  left join ends e on e.run_id = seen.run_id
  left join fences f on f.run_id = seen.run_id
  left join reopens o on o.run_id = seen.run_id
  left join resumed n on n.run_id = seen.run_id
),
runs_written as (
  insert into control.runs as t (id, specialist, task, model, backend, started_at, status, ended_at,
    steps, prompt_tokens, completion_tokens, total_tokens, duration_ms, payload, error, resumes)
  select run_id, specialist, task, model, backend, started_at, status, ended_at, steps,
    prompt_tokens, completion_tokens, total_tokens, duration_ms, payload, error, new_resumes
  from merged
  -- A fenced run's row was made when its worker took it: never made again from the batch.
  where merged.fence is null
  on conflict (id) do update set
    (specialist, task, model, backend, started_at, status, ended_at, steps, prompt_tokens,
      completion_tokens, total_tokens, duration_ms, payload, error, resumes, updated_at) = (
    select
      case when m.has_start then excluded.specialist else t.specialist end,
      case when m.has_start then excluded.task else t.task end,
      case when m.has_start then excluded.model else t.model end,
      case when m.has_start then excluded.backend else t.backend end,
      case when m.has_start then excluded.started_at else t.started_at end,
      case when m.has_end then excluded.status when m.has_reopen then 'running' else t.status end,
      case when m.has_end then excluded.ended_at when m.has_reopen then null else t.ended_at end,
      case when m.has_end then excluded.steps else t.steps end,
      case when m.has_end then excluded.prompt_tokens else t.prompt_tokens end,
      case when m.has_end then excluded.completion_tokens else t.completion_tokens end,
      case when m.has_end then excluded.total_tokens else t.total_tokens end,
      case when m.has_end then excluded.duration_ms else t.duration_ms end,
      case when m.has_end then excluded.payload when m.has_reopen then null else t.payload end,
      case when m.has_end then excluded.error when m.has_reopen then null else t.error end,
      t.resumes + m.new_resumes,
      now()
    from merged m where m.run_id = excluded.id)
  where exists (select 1 from merged m
    where m.run_id = excluded.id and (m.has_start or m.has_end or m.has_reopen or m.new_resumes > 0))
),
fenced_written as (
  update control.runs as t set
    specialist = case when m.has_start then m.specialist else t.specialist end,
    task = case when m.has_start then m.task else t.task end,
    model = case when m.has_start then m.model else t.model end,
    backend = case when m.has_start then m.backend else t.backend end,
    started_at = case when m.has_start then m.started_at else t.started_at end,
    status = case when m.has_end then m.status else t.status end,
    ended_at = case when m.has_end then m.ended_at when m.has_reopen then null else t.ended_at end,
    steps = case when m.has_end then m.steps else t.steps end,
    prompt_tokens = case when m.has_end then m.prompt_tokens else t.prompt_tokens end,
    completion_tokens = case when m.has_end then m.completion_tokens else t.completion_tokens end,
    total_tokens = case when m.has_end then m.total_tokens else t.total_tokens end,
    duration_ms = case when m.has_end then m.duration_ms else t.duration_ms end,
    payload = case when m.has_end then m.payload when m.has_reopen then null else t.payload end,
    error = case when m.has_end then m.error when m.has_reopen then null else t.error end,
    updated_at = now()
  from merged m
  where m.fence is not null and t.id = m.run_id and t.lease_token = m.fence and t.status = 'running'
  returning t.id
),
open_runs as (
  select run_id from merged where fence is null
  union all
  select id from fenced_written
  union all
  -- Its end is already in (the mirror wrote run_end after a cut dropped earlier lines), still
  -- under this token and its lease still held (the worker holds it until every line is in; a
  -- reaper takes only expired ones): the backfill may add the lines missing before it (issue
  -- 35). The row itself is left alone.
  select t.id from merged m join control.runs t on t.id = m.run_id
  where m.fence is not null and t.lease_token = m.fence and t.status not in ('running', 'queued')
    and t.lease_expires > now()
),
events_written as (
  insert into control.run_events (run_id, seq, kind, ts, body)
  select r.run_id, r.seq, r.kind, r.ts, r.body
  from batch, jsonb_to_recordset(batch.doc->'events')
    as r(run_id text, seq integer, kind text, ts timestamptz, body jsonb)
  where r.run_id in (select run_id from open_runs)
  on conflict (run_id, seq) do nothing
  returning 1
),
calls_written as (
  insert into control.agent_run (run_id, seq, step, tool, model, latency_ms, success,
    error_reason, prompt_tokens, completion_tokens, total_tokens, reasoning_tokens, reasoning_chars, ts)
  select r.run_id, r.seq, r.step, r.tool, r.model, r.latency_ms, r.success, r.error_reason,
    r.prompt_tokens, r.completion_tokens, r.total_tokens, r.reasoning_tokens, r.reasoning_chars, r.ts
  from batch, jsonb_to_recordset(batch.doc->'calls') as r(run_id text, seq integer, step integer,
    tool text, model text, latency_ms integer, success boolean, error_reason text,
    prompt_tokens integer, completion_tokens integer, total_tokens integer,
    reasoning_tokens integer, reasoning_chars integer, ts timestamptz)
  where r.run_id in (select run_id from open_runs)
  on conflict (run_id, seq) do nothing
  returning 1
),
approvals_written as (
  -- What a person was asked and answered (SPEC §19): a request inserts the row, a decision
  -- fills in who, how and at what scope; either may come first, and a sync sends them again.
  insert into control.approvals as a (approval_id, run_id, step, call_id, tool, argv, path, rule,
    proposals, on_approval, requested_at, expires_at, state, scope, pattern, channel, answered_by,
    message, answered_at)
  select r.approval_id, r.run_id, r.step, r.call_id, r.tool, r.argv, r.path, r.rule, r.proposals,
    r.on_approval, r.requested_at, r.expires_at, r.state, r.scope, r.pattern, r.channel,
    r.answered_by, r.message, r.answered_at
  from batch, jsonb_to_recordset(batch.doc->'approvals') as r(approval_id text, run_id text,
    step integer, call_id text, tool text, argv jsonb, path text, rule text, proposals jsonb,
    on_approval text, requested_at timestamptz, expires_at timestamptz, state text, scope text,
    pattern text, channel text, answered_by text, message text, answered_at timestamptz)
  where r.run_id in (select run_id from open_runs)
  on conflict (approval_id) do update set
    step = coalesce(a.step, excluded.step),
    call_id = coalesce(a.call_id, excluded.call_id),
    tool = coalesce(a.tool, excluded.tool),
    argv = coalesce(a.argv, excluded.argv),
    path = coalesce(a.path, excluded.path),
    rule = coalesce(a.rule, excluded.rule),
    proposals = coalesce(a.proposals, excluded.proposals),
    on_approval = coalesce(a.on_approval, excluded.on_approval),
    requested_at = coalesce(a.requested_at, excluded.requested_at),
    expires_at = coalesce(a.expires_at, excluded.expires_at),
    state = case when excluded.channel is not null then excluded.state else a.state end,
    scope = coalesce(excluded.scope, a.scope),
    pattern = coalesce(excluded.pattern, a.pattern),
    channel = coalesce(excluded.channel, a.channel),
    answered_by = coalesce(excluded.answered_by, a.answered_by),
    message = coalesce(excluded.message, a.message),
    answered_at = coalesce(excluded.answered_at, a.answered_at),
    updated_at = now()
  returning 1
)
select (select count(*) from events_written)::integer as events,
  (select count(*) from calls_written)::integer as model_calls`;

/**
 * Writes a batch in one statement (atomic by itself; a caller's transaction around it changes
 * nothing). Returns the rows actually inserted. `fences`: run id → the lease token its writes need.
 */
export async function writeBatch(
  db: SqlQuery,
  batch: ControlBatch,
  fences: ReadonlyMap<string, string> = new Map(),
): Promise<ControlWriteCounts> {
  if (batch.events.length === 0 && batch.modelCalls.length === 0) return { events: 0, modelCalls: 0 };
  const starts = new Map<string, Record<string, unknown>>();
  const ends = new Map<string, Record<string, unknown>>();
  // Of a run's run_end and run_resumed, the later one says whether its row is open (see above).
  const reopens = new Set<string>();
  const resumed: { run_id: string; seq: number }[] = [];
  for (const event of batch.events) {
    if (event.kind === 'run_start') {
      const { specialist, task, model, backend } = event;
      starts.set(event.run_id, { run_id: event.run_id, ts: event.ts, specialist, task, model, backend });
    } else if (event.kind === 'run_resumed') {
      ends.delete(event.run_id);
      reopens.add(event.run_id);
      if (!fences.has(event.run_id)) resumed.push({ run_id: event.run_id, seq: event.seq });
    } else if (event.kind === 'run_end') {
      reopens.delete(event.run_id);
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
  const fenced = [...new Set(seen.map((row) => row.run_id))].flatMap((runId) => {
    const token = fences.get(runId);
    return token === undefined ? [] : [{ run_id: runId, token }];
  });
  const [counts] = await db.query<{ events: number; model_calls: number }>(WRITE_BATCH, [
    jsonParam({
      seen,
      starts: [...starts.values()],
      ends: [...ends.values()],
      reopens: [...reopens].map((run_id) => ({ run_id })),
      resumed,
      events: batch.events.map(eventRow),
      calls: batch.modelCalls,
      fences: fenced,
      approvals: approvalRows(batch.events),
    }),
  ]);
  return { events: counts?.events ?? 0, modelCalls: counts?.model_calls ?? 0 };
}

/** The envelope goes to columns; everything else (`v` included) is the body. */
function eventRow(event: RunEvent): Record<string, unknown> {
  const { run_id, seq, kind, ts, ...body } = event;
  return { run_id, seq, kind, ts, body };
}

/**
 * One row per approval the batch mentions, its request and its decision merged (one statement may
 * not touch a row twice). A decision through a grant belongs to the grant's own approval and is
 * not that approval's answer: left out.
 */
function approvalRows(events: readonly RunEvent[]): Record<string, unknown>[] {
  const rows = new Map<string, Record<string, unknown>>();
  for (const event of events) {
    if (event.kind === 'approval_requested') {
      rows.set(event.approval_id, {
        state: 'pending',
        ...rows.get(event.approval_id),
        approval_id: event.approval_id,
        run_id: event.run_id,
        step: event.step,
        call_id: event.call_id,
        tool: event.tool,
        argv: event.argv ?? null,
        path: event.path ?? null,
        rule: event.rule,
        proposals: event.proposals,
        on_approval: event.on_approval,
        requested_at: event.ts,
        expires_at: event.expires_at ?? null,
      });
    } else if (event.kind === 'approval_decided' && event.channel !== 'grant') {
      rows.set(event.approval_id, {
        ...rows.get(event.approval_id),
        approval_id: event.approval_id,
        run_id: event.run_id,
        state: event.state,
        scope: event.scope,
        pattern: event.pattern ?? null,
        channel: event.channel,
        answered_by: event.by ?? null,
        message: event.message ?? null,
        answered_at: event.answered_at ?? event.ts,
      });
    }
  }
  return [...rows.values()];
}

import type { MigrationReport } from '../../application/control/control-ports.ts';
import type { SqlExecutor, SqlQuery } from './sql-executor.ts';

/** A schema change. Never edit one that has shipped: add the next version instead. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly statements: readonly string[];
}

/** The `control` schema, version by version. The same SQL runs on Postgres and on PGlite. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'runs, run_events, agent_run',
    statements: [
      `create table control.runs (
        id text primary key,
        specialist text,
        task text,
        model text,
        backend text,
        status text not null default 'running',
        started_at timestamptz,
        ended_at timestamptz,
        steps integer,
        prompt_tokens integer,
        completion_tokens integer,
        total_tokens integer,
        duration_ms integer,
        payload jsonb,
        error jsonb,
        updated_at timestamptz not null default now()
      )`,
      `create table control.run_events (
        run_id text not null,
        seq integer not null,
        kind text not null,
        ts timestamptz not null,
        body jsonb not null,
        primary key (run_id, seq)
      )`,
      `create table control.agent_run (
        run_id text not null,
        seq integer not null,
        step integer,
        tool text not null check (tool in ('lm_studio', 'ollama')),
        model text not null,
        latency_ms integer,
        success boolean not null,
        error_reason text,
        prompt_tokens integer not null default 0,
        completion_tokens integer not null default 0,
        total_tokens integer not null default 0,
        ts timestamptz not null,
        primary key (run_id, seq)
      )`,
    ],
  },
  {
    version: 2,
    name: 'indexes for the exports and listings',
    statements: [
      'create index agent_run_ts_idx on control.agent_run (ts)',
      'create index agent_run_tool_ts_idx on control.agent_run (tool, ts)',
      'create index agent_run_model_ts_idx on control.agent_run (model, ts)',
      'create index runs_started_at_idx on control.runs (started_at desc)',
      'create index run_events_kind_ts_idx on control.run_events (kind, ts)',
    ],
  },
  {
    version: 3,
    name: 'daemon_tasks: the OpenSpec daemon, one row per repository, change and task',
    statements: [
      `create table control.daemon_tasks (
        repo text not null,
        change text not null,
        task_id text not null,
        text text not null,
        status text not null,
        attempts integer not null default 0,
        run_ids jsonb not null default '[]',
        commit text,
        diagnostics text,
        started_at timestamptz,
        ended_at timestamptz,
        seconds double precision,
        tokens integer not null default 0,
        files_changed integer,
        lines_added integer,
        lines_removed integer,
        tests_passed integer,
        updated_at timestamptz not null default now(),
        primary key (repo, change, task_id)
      )`,
    ],
  },
  {
    version: 4,
    name: 'batteries, battery_cells: one row per battery, one per cell (task × model × repeat)',
    statements: [
      `create table control.batteries (
        id text primary key,
        name text not null,
        specialist text not null,
        file text,
        models jsonb not null default '[]',
        started_at timestamptz,
        ended_at timestamptz,
        status text not null,
        updated_at timestamptz not null default now()
      )`,
      `create table control.battery_cells (
        battery_id text not null,
        task text not null,
        model text not null,
        repeat integer not null,
        status text not null,
        passed boolean not null,
        failed_check text,
        error text,
        run_id text,
        steps integer not null default 0,
        tokens integer not null default 0,
        seconds double precision,
        checks jsonb not null default '[]',
        started_at timestamptz,
        ended_at timestamptz,
        updated_at timestamptz not null default now(),
        primary key (battery_id, task, model, repeat)
      )`,
      'create index batteries_started_at_idx on control.batteries (started_at desc)',
    ],
  },
  {
    version: 5,
    name: 'workers, run_cancels: fabric workers taking queued runs (issue 17)',
    statements: [
      `create table control.workers (
        id text primary key,
        host text not null,
        pid integer not null,
        specialists jsonb not null default '[]',
        concurrency integer not null,
        runs jsonb not null default '[]',
        state text not null default 'running',
        started_at timestamptz not null default now(),
        last_heartbeat timestamptz not null default now(),
        stopped_at timestamptz
      )`,
      'create index workers_state_idx on control.workers (state, last_heartbeat)',
      `create table control.run_cancels (
        run_id text primary key,
        requested_at timestamptz not null default now()
      )`,
    ],
  },
  {
    version: 6,
    name: 'daemon_tasks: clippy warnings before and after a task, and why a figure is missing (SPEC §11)',
    statements: [
      'alter table control.daemon_tasks add column clippy_before integer',
      'alter table control.daemon_tasks add column clippy_after integer',
      'alter table control.daemon_tasks add column clippy_note text',
    ],
  },
  {
    version: 7,
    name: 'workspace_archives, cell_results: battery cells run by fabric workers (issue 17)',
    statements: [
      `create table control.workspace_archives (
        id text primary key,
        bytes bytea not null,
        size integer not null,
        created_at timestamptz not null default now()
      )`,
      `create table control.cell_results (
        run_id text primary key,
        outcome jsonb not null,
        created_at timestamptz not null default now()
      )`,
    ],
  },
  {
    version: 8,
    name: 'agent_run: what each model call spent reasoning (SPEC §16)',
    statements: [
      'alter table control.agent_run add column reasoning_tokens integer',
      'alter table control.agent_run add column reasoning_chars integer',
    ],
  },
  {
    version: 9,
    name: 'agent_run: the backend kinds of llm.backends (llama_cpp, vllm, openai; issue 27)',
    statements: [
      'alter table control.agent_run drop constraint agent_run_tool_check',
      `alter table control.agent_run add constraint agent_run_tool_check
        check (tool in ('lm_studio', 'ollama', 'llama_cpp', 'vllm', 'openai'))`,
    ],
  },
  {
    version: 10,
    name: 'runs: the lease a fabric worker holds on a queued run, with its fencing token (issue 26)',
    statements: [
      'create sequence control.run_lease_seq',
      'alter table control.runs add column lease_worker text',
      'alter table control.runs add column lease_token bigint',
      'alter table control.runs add column lease_expires timestamptz',
      'alter table control.runs add column lease_job text',
      'create index runs_lease_expires_idx on control.runs (lease_expires) where lease_expires is not null',
    ],
  },
  {
    version: 11,
    name: "runs: whether a dead worker's run may be resumed by another, and how often it was (issue 31)",
    statements: [
      'alter table control.runs add column resumable boolean not null default false',
      'alter table control.runs add column resumes integer not null default 0',
    ],
  },
  {
    version: 12,
    name: 'approvals: what a person was asked and answered, mirrored from the runlog (SPEC §19)',
    statements: [
      `create table control.approvals (
        approval_id text primary key,
        run_id text not null,
        step integer,
        call_id text,
        tool text,
        argv jsonb,
        path text,
        rule text,
        proposals jsonb,
        on_approval text,
        requested_at timestamptz,
        expires_at timestamptz,
        state text not null,
        scope text,
        pattern text,
        channel text,
        answered_by text,
        message text,
        answered_at timestamptz,
        updated_at timestamptz not null default now()
      )`,
      'create index approvals_run_idx on control.approvals (run_id)',
      "create index approvals_pending_idx on control.approvals (requested_at) where state = 'pending'",
    ],
  },
  {
    version: 13,
    name: 'model_cards: what the probe suite and batteries measured of each model on each server (SPEC §20)',
    statements: [
      `create table control.model_cards (
        backend text not null,
        base_url text not null,
        model text not null,
        probed_at timestamptz not null,
        card jsonb not null,
        updated_at timestamptz not null default now(),
        primary key (backend, base_url, model)
      )`,
    ],
  },
];

/** The schema version this code expects. */
export const SCHEMA_VERSION = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

// Two processes may migrate at once (a run and `fabric control migrate`): they queue on this lock.
const LOCK = "select pg_advisory_xact_lock(hashtext('agent_fabric.control.migrate'))";

/**
 * Applies the migrations that are missing, each in its own transaction together with its
 * `control.schema_migrations` row, so a failure leaves the schema at the last whole version.
 */
export async function applyMigrations(
  db: SqlExecutor,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<MigrationReport> {
  await db.transaction(async (tx) => {
    await tx.query(LOCK);
    await tx.query('create schema if not exists control');
    await tx.query(
      `create table if not exists control.schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`,
    );
  });
  const applied: number[] = [];
  for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
    const done = await db.transaction(async (tx) => {
      await tx.query(LOCK);
      if ((await appliedVersions(tx)).has(migration.version)) return false;
      for (const statement of migration.statements) await tx.query(statement);
      await tx.query('insert into control.schema_migrations (version, name) values ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      return true;
    });
    if (done) applied.push(migration.version);
  }
  const versions = await appliedVersions(db);
  return { applied, version: Math.max(0, ...versions) };
}

async function appliedVersions(db: SqlQuery): Promise<Set<number>> {
  const rows = await db.query<{ version: number }>('select version from control.schema_migrations');
  return new Set(rows.map((row) => row.version));
}

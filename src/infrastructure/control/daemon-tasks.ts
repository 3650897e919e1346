import type { DaemonTaskRecord } from '../../application/daemon/daemon-state.ts';
import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

const UPSERT = `insert into control.daemon_tasks (
    repo, change, task_id, text, status, attempts, run_ids, commit, diagnostics, started_at, ended_at,
    seconds, tokens, files_changed, lines_added, lines_removed, tests_passed,
    clippy_before, clippy_after, clippy_note, updated_at)
  values ($1, $2, $3, $4, $5, $6, $7::text::jsonb, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
    $18, $19, $20, now())
  on conflict (repo, change, task_id) do update set
    text = excluded.text, status = excluded.status, attempts = excluded.attempts,
    run_ids = excluded.run_ids, commit = excluded.commit, diagnostics = excluded.diagnostics,
    started_at = excluded.started_at, ended_at = excluded.ended_at, seconds = excluded.seconds,
    tokens = excluded.tokens, files_changed = excluded.files_changed, lines_added = excluded.lines_added,
    lines_removed = excluded.lines_removed, tests_passed = excluded.tests_passed,
    clippy_before = excluded.clippy_before, clippy_after = excluded.clippy_after,
    clippy_note = excluded.clippy_note, updated_at = now()`;

/** Writes (or rewrites) a task's row of `control.daemon_tasks`: one statement, idempotent. */
export async function upsertDaemonTask(db: SqlQuery, repo: string, task: DaemonTaskRecord): Promise<void> {
  await db.query(UPSERT, [
    repo,
    task.change,
    task.id,
    task.text,
    task.status,
    task.attempts,
    jsonParam(task.run_ids),
    task.commit,
    // Postgres text refuses NUL; compiler output may hold one.
    task.diagnostics?.replaceAll('\u0000', '\uFFFD') ?? null,
    task.started_at,
    task.ended_at,
    task.seconds,
    task.tokens,
    task.files_changed,
    task.lines_added,
    task.lines_removed,
    task.tests_passed,
    // A record read from a state file older than the clippy figures lacks them.
    task.clippy_before ?? null,
    task.clippy_after ?? null,
    task.clippy_note ?? null,
  ]);
}

/** The rows of a repository, for readers of the control plane. */
export async function queryDaemonTasks(db: SqlQuery, repo: string): Promise<Record<string, unknown>[]> {
  return db.query<Record<string, unknown>>(
    'select * from control.daemon_tasks where repo = $1 order by change, task_id',
    [repo],
  );
}

/**
 * `control.batteries` and `control.battery_cells` (SPEC §12): a battery's row and one per cell,
 * each written with one idempotent upsert, so a cell recorded twice (a resumed battery that ran
 * it again) is one row with its latest result.
 */
import type { BatteryRow } from '../../application/battery/battery-ports.ts';
import type { CellResult } from '../../application/battery/battery-types.ts';
import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

const UPSERT_BATTERY = `insert into control.batteries (
    id, name, specialist, file, models, started_at, ended_at, status, updated_at)
  values ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $8, now())
  on conflict (id) do update set
    name = excluded.name, specialist = excluded.specialist, file = excluded.file,
    models = excluded.models, started_at = excluded.started_at, ended_at = excluded.ended_at,
    status = excluded.status, updated_at = now()`;

const UPSERT_CELL = `insert into control.battery_cells (
    battery_id, task, model, repeat, status, passed, failed_check, error, run_id, steps, tokens,
    seconds, checks, started_at, ended_at, updated_at)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::text::jsonb, $14, $15, now())
  on conflict (battery_id, task, model, repeat) do update set
    status = excluded.status, passed = excluded.passed, failed_check = excluded.failed_check,
    error = excluded.error, run_id = excluded.run_id, steps = excluded.steps,
    tokens = excluded.tokens, seconds = excluded.seconds, checks = excluded.checks,
    started_at = excluded.started_at, ended_at = excluded.ended_at, updated_at = now()`;

/** Writes (or rewrites) a battery's row. */
export async function upsertBattery(db: SqlQuery, row: BatteryRow): Promise<void> {
  await db.query(UPSERT_BATTERY, [
    row.id,
    row.name,
    row.specialist,
    row.file,
    jsonParam(row.models),
    row.started_at,
    row.ended_at,
    row.status,
  ]);
}

/** Writes (or rewrites) a cell's row. */
export async function upsertBatteryCell(db: SqlQuery, batteryId: string, cell: CellResult): Promise<void> {
  await db.query(UPSERT_CELL, [
    batteryId,
    cell.task,
    cell.model,
    cell.repeat,
    cell.status,
    cell.passed,
    cell.failed_check,
    // Postgres text refuses NUL; a failed command's output may hold one.
    cell.error?.replaceAll('\u0000', '\uFFFD') ?? null,
    cell.run_id,
    cell.steps,
    cell.tokens,
    cell.seconds,
    jsonParam(cell.checks),
    cell.started_at,
    cell.ended_at,
  ]);
}

/** A battery's row, or null. */
export async function queryBattery(db: SqlQuery, id: string): Promise<Record<string, unknown> | null> {
  const rows = await db.query<Record<string, unknown>>('select * from control.batteries where id = $1', [id]);
  return rows[0] ?? null;
}

/** A battery's cells, by task, model and repeat. */
export async function queryBatteryCells(db: SqlQuery, id: string): Promise<Record<string, unknown>[]> {
  return db.query<Record<string, unknown>>(
    'select * from control.battery_cells where battery_id = $1 order by task, model, repeat',
    [id],
  );
}

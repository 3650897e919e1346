import type { CellOutcome } from '../../application/battery/cell-executor.ts';
import type { CellReports } from '../../application/queue/queue-ports.ts';
import { jsonParam } from '../control/json-param.ts';
import type { SqlExecutor } from '../control/sql-executor.ts';

/**
 * Battery archives and cell outcomes in the control schema (migration 7). An archive travels as
 * base64 text decoded by the database, so the driver's binary handling never matters.
 */
export class PostgresCellReports implements CellReports {
  readonly #db: SqlExecutor;

  constructor(db: SqlExecutor) {
    this.#db = db;
  }

  async putArchive(id: string, archive: Uint8Array): Promise<void> {
    await this.#db.query(
      `insert into control.workspace_archives (id, bytes, size) values ($1, decode($2, 'base64'), $3)
       on conflict (id) do nothing`,
      [id, Buffer.from(archive).toString('base64'), archive.length],
    );
  }

  async archive(id: string): Promise<Uint8Array> {
    const rows = await this.#db.query<{ data: string }>(
      `select encode(bytes, 'base64') as data from control.workspace_archives where id = $1`,
      [id],
    );
    if (rows[0] === undefined) throw new Error(`no workspace archive ${id} in the queue's database`);
    return new Uint8Array(Buffer.from(rows[0].data.replace(/\s+/g, ''), 'base64'));
  }

  async report(runId: string, outcome: CellOutcome): Promise<void> {
    await this.#db.query(
      `insert into control.cell_results (run_id, outcome) values ($1, $2::text::jsonb)
       on conflict (run_id) do update set outcome = excluded.outcome`,
      [runId, jsonParam(outcome)],
    );
  }

  async outcome(runId: string): Promise<CellOutcome | null> {
    const rows = await this.#db.query<{ outcome: CellOutcome }>(
      'select outcome from control.cell_results where run_id = $1',
      [runId],
    );
    return rows[0]?.outcome ?? null;
  }
}

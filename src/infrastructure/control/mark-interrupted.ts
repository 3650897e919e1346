import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

// Only rows still `running`: a run_end mirrored meanwhile wins. The ids come as one JSON array,
// like the batch writes, so the text is the same on both drivers whatever the count.
const MARK_INTERRUPTED = `update control.runs set status = 'interrupted', updated_at = now()
  where status = 'running'
    and id in (select jsonb_array_elements_text($1::text::jsonb))
  returning id`;

/** Marks runs whose process died without a `run_end` as `interrupted`; returns how many changed. */
export async function markInterrupted(db: SqlQuery, runIds: readonly string[]): Promise<number> {
  if (runIds.length === 0) return 0;
  const rows = await db.query<{ id: string }>(MARK_INTERRUPTED, [jsonParam([...new Set(runIds)])]);
  return rows.length;
}

/** What the control plane holds of some runs, asked once their process has let go of the store. */
import type { FabricConfig } from '../../src/config/load.ts';
import { openControlStore } from '../../src/infrastructure/control/open-control-store.ts';

/** `rows/runs (ended)`: runs with a row, and those whose `run_end` was mirrored; `-` when off. */
export async function controlRows(config: FabricConfig, ids: ReadonlySet<string>): Promise<string> {
  const store = await openControlStore({
    enabled: config.control.enabled,
    dsn: config.control.dsn,
    runsDir: config.runs_dir,
  });
  if (store === null) return '-';
  try {
    const rows = (await store.listRuns({ limit: ids.size * 2 + 10 })).filter((row) => ids.has(row.id));
    const ended = rows.filter((row) => row.status !== 'running').length;
    return `${rows.length}/${ids.size} (${ended} ended)`;
  } catch (error) {
    return `unreadable: ${String(error).slice(0, 60)}`;
  } finally {
    await store.close();
  }
}

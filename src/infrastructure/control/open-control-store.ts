import { stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { ControlStore } from '../../application/control/control-ports.ts';

/** What picks the control store: the parsed `control` config (DSN already merged with `FABRIC_DSN`) and the runs directory. */
export interface ControlStoreSettings {
  readonly enabled: boolean;
  readonly dsn?: string | undefined;
  readonly runsDir: string;
  /**
   * Only an embedded database that already exists (`null` otherwise): for commands that read,
   * which must not create a 39 MB database to say there is nothing in it.
   */
  readonly existingOnly?: boolean;
  /** The most connections the Postgres store's read pool opens (`control.pool_size`); default 3. */
  readonly poolSize?: number;
  /** The fabric's cache directory (FabricConfig.cacheDir): a new embedded database starts from it. */
  readonly cacheDir?: string | null;
}

/** Where the embedded database lives: hidden under the runs directory, which run listings skip. */
export function embeddedControlDir(runsDir: string): string {
  return join(resolve(runsDir), '.control', 'pglite');
}

/**
 * Chooses the control store: `null` when the control plane is disabled (`db_off`), Postgres
 * when a DSN is given, else the embedded PGlite under `<runsDir>/.control/pglite`. Nothing is
 * connected or created here; the first query does that, so building a store never fails a run.
 * The adapter is imported here, on use: a process that never opens a store (the control plane
 * off, or a one-shot run with the embedded one) never loads the `postgres` client.
 */
export async function openControlStore(settings: ControlStoreSettings): Promise<ControlStore | null> {
  if (!settings.enabled) return null;
  if (settings.dsn !== undefined && settings.dsn.trim() !== '') {
    const { PostgresControlStore } = await import('./postgres-control-store.ts');
    return new PostgresControlStore(
      settings.dsn,
      settings.poolSize === undefined ? {} : { maxConnections: settings.poolSize },
    );
  }
  const dataDir = embeddedControlDir(settings.runsDir);
  if (settings.existingOnly === true && !(await embeddedControlExists(settings.runsDir))) return null;
  const { PgliteControlStore } = await import('./pglite-control-store.ts');
  return new PgliteControlStore(dataDir, { cacheDir: settings.cacheDir ?? null });
}

/** Whether the runs directory has an embedded database (a data directory initdb finished). */
export async function embeddedControlExists(runsDir: string): Promise<boolean> {
  return stat(join(embeddedControlDir(runsDir), 'PG_VERSION')).then(
    () => true,
    () => false,
  );
}

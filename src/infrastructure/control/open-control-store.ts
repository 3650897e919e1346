import { join, resolve } from 'node:path';
import type { ControlStore } from '../../application/control-ports.ts';
import { PgliteControlStore } from './pglite-control-store.ts';
import { PostgresControlStore } from './postgres-control-store.ts';

/** What picks the control store: the parsed `control` config (DSN already merged with `FABRIC_DSN`) and the runs directory. */
export interface ControlStoreSettings {
  readonly enabled: boolean;
  readonly dsn?: string | undefined;
  readonly runsDir: string;
}

/** Where the embedded database lives: hidden under the runs directory, which run listings skip. */
export function embeddedControlDir(runsDir: string): string {
  return join(resolve(runsDir), '.control', 'pglite');
}

/**
 * Chooses the control store: `null` when the control plane is disabled (`db_off`), Postgres
 * when a DSN is given, else the embedded PGlite under `<runsDir>/.control/pglite`. Nothing is
 * connected or created here; the first query does that, so building a store never fails a run.
 */
export function openControlStore(settings: ControlStoreSettings): ControlStore | null {
  if (!settings.enabled) return null;
  if (settings.dsn !== undefined && settings.dsn.trim() !== '') return new PostgresControlStore(settings.dsn);
  return new PgliteControlStore(embeddedControlDir(settings.runsDir));
}

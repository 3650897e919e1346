import type { ControlStore } from '../application/control/control-ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { openControlStore } from '../infrastructure/control/open-control-store.ts';

/**
 * A control store of its own. `existingOnly` (for commands that only read: `fabric runs`,
 * `fabric control export`): an embedded database that does not exist yet is not created, and
 * the store is null, so the command reads the runlogs instead.
 *
 * A control store of its own for a command that reads or maintains the control plane
 * (`fabric runs`, `fabric control`): Postgres for a DSN, else the embedded PGlite; null when
 * disabled. Runs never use this: they share their Fabric's one store (`Fabric.controlStore()`).
 */
export function controlStoreFor(
  config: FabricConfig,
  options: { readonly existingOnly?: boolean } = {},
): Promise<ControlStore | null> {
  return openControlStore({
    enabled: config.control.enabled,
    dsn: config.control.dsn,
    runsDir: config.runs_dir,
    existingOnly: options.existingOnly === true,
  });
}

/**
 * What a command that reads or maintains the runs opens on its own, without a Fabric
 * (`fabric runs`, `fabric control`): the control store, the runlogs, this machine's process
 * liveness, and the control plane's sync and exports. Runs never use this: they share their
 * Fabric's one store (`Fabric.controlStore()`).
 */
import type { ControlStore } from '../application/control/control-ports.ts';
import type { ProcessLiveness } from '../application/runs/liveness-ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { LockHeldError } from '../infrastructure/control/dir-lock.ts';
import { openControlStore } from '../infrastructure/control/open-control-store.ts';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { gitRunsDirOf } from '../infrastructure/daemon/daemon-runs-dir.ts';

export { servedRunsDir } from '../infrastructure/daemon/daemon-runs-dir.ts';
import { FileRunLogStore } from '../infrastructure/runlog/file-run-log-store.ts';
import { MergedRunLogs } from '../infrastructure/runlog/merged-run-logs.ts';
import { LocalProcessLiveness } from '../infrastructure/runlog/process-liveness.ts';

export { type ControlExports, buildExports, exportAll } from '../infrastructure/control/exports.ts';
export { syncRunlogs } from '../infrastructure/control/sync.ts';

/**
 * A control store of its own: Postgres for a DSN, else the embedded PGlite; null when disabled.
 * `existingOnly` (for commands that only read: `fabric runs`, `fabric control export`): an
 * embedded database that does not exist yet is not created, and the store is null, so the
 * command reads the runlogs instead.
 */
export function controlStoreFor(
  config: FabricConfig,
  options: { readonly existingOnly?: boolean } = {},
): Promise<ControlStore | null> {
  return openControlStore({
    enabled: config.control.enabled,
    dsn: config.control.dsn,
    runsDir: config.runs_dir,
    cacheDir: config.cacheDir,
    existingOnly: options.existingOnly === true,
  });
}

/** The runlogs under the config's `runs_dir`. */
export function runLogsFor(config: FabricConfig): FileRunLogStore {
  return new FileRunLogStore(config.runs_dir);
}

/**
 * The runlogs a command that reads runs sees from `repo` (the working directory, or `--repo`):
 * the config's, and when `repo` is in a git work tree a daemon has worked in, the daemon's own
 * runs directory in its git directory (`.git/fabric/runs`), which a default `./runs` never finds.
 */
export function runLogsSeenFrom(config: FabricConfig, repo: string): MergedRunLogs {
  const own = new FileRunLogStore(config.runs_dir);
  const daemons = gitRunsDirOf(repo);
  const stores =
    daemons !== null && resolve(daemons) !== own.runsDir && existsSync(daemons)
      ? [own, new FileRunLogStore(daemons)]
      : [own];
  return new MergedRunLogs(stores);
}

/** Whether a run's process still exists, on this machine. */
export function localLiveness(): ProcessLiveness {
  return new LocalProcessLiveness();
}

/** The process that holds the embedded control database, when that is why it could not be opened. */
export function embeddedHolder(error: unknown): number | null {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof LockHeldError) return e.holder;
  }
  return null;
}

/**
 * The run record inside a workspace (SPEC §6): the runs directory and the config file in use.
 * With the default `./runs` and the working directory as the workspace, the runs directory lies
 * inside the workspace; nothing the model does may read or change it, so file tools refuse these
 * paths and bubblewrap mounts them read-only.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { FabricSettings } from '../../application/ports.ts';
import { isInside } from './is-inside.ts';

/** A protected path below a workspace root, as a real absolute path. */
export interface RecordPath {
  readonly absolute: string;
  readonly what: 'runs_dir' | 'config_file';
}

/** How each record path is named to the model. */
export const RECORD_DESCRIPTIONS: Readonly<Record<RecordPath['what'], string>> = {
  runs_dir: "the fabric's runs directory (the record of every run)",
  config_file: "the fabric's config file in use",
};

/** The record paths of `settings` that lie strictly inside `root` (a real path). */
export async function recordPathsIn(root: string, settings: FabricSettings): Promise<RecordPath[]> {
  const found: RecordPath[] = [];
  const candidates = [
    ['runs_dir', settings.runsDir],
    ['config_file', settings.configFile],
  ] as const;
  for (const [what, configured] of candidates) {
    if (configured === undefined || configured === '') continue;
    const absolute = await realPathOf(path.resolve(configured));
    if (absolute !== root && isInside(root, absolute)) found.push({ absolute, what });
  }
  return found;
}

/** The record path `absolute` (a real path) is in, if any. */
export function recordPathOf(record: readonly RecordPath[], absolute: string): RecordPath | undefined {
  return record.find((entry) => isInside(entry.absolute, absolute));
}

/** The real path of `target`, resolving its deepest existing ancestor when it does not exist yet. */
async function realPathOf(target: string): Promise<string> {
  const missing: string[] = [];
  let existing = target;
  for (;;) {
    if ((await lstat(existing).catch(() => undefined)) !== undefined) {
      const real = await realpath(existing).catch(() => existing);
      return path.join(real, ...missing);
    }
    const parent = path.dirname(existing);
    if (parent === existing) return target;
    missing.unshift(path.basename(existing));
    existing = parent;
  }
}

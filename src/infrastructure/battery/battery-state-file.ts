/**
 * A battery's own record: `<runs_dir>/batteries/<id>.json`, rewritten atomically (a temporary
 * file, then rename) after every cell, so a battery killed at any moment leaves a whole file
 * that `--resume` starts from — with or without the control plane.
 */
import { mkdir, readFile, readdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { BatteryState } from '../../application/battery/battery-types.ts';
import type { BatteryStates } from '../../application/battery/session-ports.ts';
import { FabricError } from '../../domain/errors.ts';

/** Where battery states are kept under a runs directory. */
export function batteriesDir(runsDir: string): string {
  return path.join(runsDir, 'batteries');
}

/** Reads and writes battery states under a runs directory. */
export class BatteryStateFiles implements BatteryStates {
  readonly #dir: string;
  /** Writes of one file are queued: the last state written is the last state given. */
  readonly #writes = new Map<string, Promise<void>>();

  constructor(runsDir: string) {
    this.#dir = batteriesDir(runsDir);
  }

  pathOf(id: string): string {
    return path.join(this.#dir, `${id}.json`);
  }

  save(state: BatteryState): Promise<void> {
    const id = state.plan.id;
    const previous = this.#writes.get(id) ?? Promise.resolve();
    const next = previous.then(async () => {
      await mkdir(this.#dir, { recursive: true });
      const file = this.pathOf(id);
      const temporary = `${file}.${crypto.randomUUID().slice(0, 8)}.tmp`;
      await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`);
      await rename(temporary, file);
    });
    this.#writes.set(
      id,
      next.catch(() => {}),
    );
    return next;
  }

  /** The ids of the batteries kept here, newest first (ids sort by start time). */
  async ids(): Promise<string[]> {
    const names = await readdir(this.#dir).catch(() => [] as string[]);
    return names
      .filter((name) => name.endsWith('.json'))
      .map((name) => name.slice(0, -'.json'.length))
      .sort()
      .reverse();
  }

  /** The state of a battery; `run_not_found` naming the id when there is none. */
  async read(id: string): Promise<BatteryState> {
    if (!/^[A-Za-z0-9._-]+$/.test(id)) {
      throw new FabricError(
        'usage',
        `"${id}" is not a battery id (it looks like bat-20261122T055512Z-3f9a1c).`,
      );
    }
    let text: string;
    try {
      text = await readFile(this.pathOf(id), 'utf8');
    } catch {
      throw new FabricError(
        'run_not_found',
        `No battery "${id}" in ${this.#dir}. The id is printed as a battery starts; check FABRIC_RUNS_DIR.`,
      );
    }
    try {
      const state = JSON.parse(text) as BatteryState;
      if (state.version !== 1 || state.plan?.id !== id) throw new Error('not a battery state');
      return state;
    } catch (error) {
      throw new FabricError(
        'runlog_corrupt',
        `${this.pathOf(id)} is not a battery state this fabric can read.`,
        {
          cause: error,
        },
      );
    }
  }
}

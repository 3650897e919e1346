/**
 * A battery cell's workspace on a worker: the battery's archive, unpacked into a fresh
 * temporary directory for each cell and removed after its checks.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CellWorkspace, CellWorkspaces } from '../../application/battery/battery-ports.ts';
import type { CellKey } from '../../application/battery/battery-types.ts';
import { errorMessage, FabricError } from '../../domain/errors.ts';
import { unpackWorkspace } from './workspace-archive.ts';

/** Unpacks `load()`'s archive for each cell. */
export class ArchiveWorkspaces implements CellWorkspaces {
  readonly #load: () => Promise<Uint8Array>;

  constructor(load: () => Promise<Uint8Array>) {
    this.#load = load;
  }

  async prepare(_cell: CellKey, signal: AbortSignal): Promise<CellWorkspace> {
    signal.throwIfAborted();
    const archive = await this.#load();
    const target = await mkdtemp(path.join(tmpdir(), 'fabric-cell-'));
    try {
      await unpackWorkspace(archive, target);
    } catch (error) {
      await rm(target, { recursive: true, force: true });
      throw new FabricError('internal', `Could not unpack the battery's workspace: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    return { path: target, dispose: () => rm(target, { recursive: true, force: true }).catch(() => {}) };
  }
}

/** Keeps the last few archives a worker loaded, so a battery's cells fetch theirs once. */
export class ArchiveCache {
  readonly #entries = new Map<string, Promise<Uint8Array>>();
  readonly #keep: number;

  constructor(keep = 2) {
    this.#keep = keep;
  }

  get(id: string, load: (id: string) => Promise<Uint8Array>): Promise<Uint8Array> {
    let entry = this.#entries.get(id);
    if (entry === undefined) {
      entry = load(id);
      entry.catch(() => this.#entries.delete(id));
      this.#entries.set(id, entry);
      for (const old of this.#entries.keys()) if (this.#entries.size > this.#keep) this.#entries.delete(old);
    } else {
      // Most recently used last.
      this.#entries.delete(id);
      this.#entries.set(id, entry);
    }
    return entry;
  }
}

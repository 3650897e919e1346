/**
 * Fresh copies of a workspace, one per battery cell (SPEC §12). The original is only read.
 * What a copy leaves out (`.git/`, `target/`, the runs directory) is in left-out.ts.
 */
import { cp, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CellWorkspace, CellWorkspaces } from '../../application/battery/battery-ports.ts';
import type { CellKey } from '../../application/battery/battery-types.ts';
import { errorMessage, FabricError } from '../../domain/errors.ts';
import { isLeftOut, realLeaveOut } from './left-out.ts';

/** Copies one workspace for each cell, under a private temporary directory. */
export class WorkspaceCopies implements CellWorkspaces {
  readonly #source: string;
  readonly #leaveOut: readonly string[];
  #base: Promise<string> | undefined;
  #counter = 0;

  /** `leaveOut`: absolute paths inside the source not to copy (the runs directory). */
  constructor(source: string, leaveOut: readonly string[] = []) {
    this.#source = source;
    this.#leaveOut = leaveOut;
  }

  async prepare(cell: CellKey, signal: AbortSignal): Promise<CellWorkspace> {
    signal.throwIfAborted();
    this.#base ??= mkdtemp(path.join(tmpdir(), 'fabric-battery-'));
    const base = await this.#base;
    const source = await realpath(this.#source);
    const paths = await realLeaveOut(this.#leaveOut);
    const name = `${++this.#counter}-${slug(cell.task)}-${slug(cell.model)}-${cell.repeat}`;
    const target = path.join(base, name);
    try {
      await cp(source, target, {
        recursive: true,
        // Links are copied as links: one pointing out of the copy is refused by the sandbox, as in the original.
        verbatimSymlinks: true,
        filter: (from) => !isLeftOut(source, from, { paths }),
      });
    } catch (error) {
      await rm(target, { recursive: true, force: true });
      throw new FabricError(
        'internal',
        `Could not copy the workspace ${source} for a cell: ${errorMessage(error)}`,
        {
          cause: error,
        },
      );
    }
    return {
      path: target,
      dispose: () => rm(target, { recursive: true, force: true }).catch(() => {}),
    };
  }

  /** Removes the temporary directory the copies were made in. */
  async close(): Promise<void> {
    if (this.#base !== undefined)
      await rm(await this.#base, { recursive: true, force: true }).catch(() => {});
  }
}

function slug(text: string): string {
  return text.replace(/[^A-Za-z0-9._-]+/g, '_').slice(0, 40);
}

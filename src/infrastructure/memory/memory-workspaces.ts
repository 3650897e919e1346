/**
 * Cells' workspaces that are only names (`BatteryWorkspaces`), for batteries whose runs and
 * checks touch no disk (the battery's unit tests): each cell gets a path of its own, and the
 * adapter tells which copies are still there.
 */
import type { CellWorkspace } from '../../application/battery/battery-ports.ts';
import type { CellKey } from '../../application/battery/battery-types.ts';
import type { BatteryWorkspaces } from '../../application/battery/session-ports.ts';

export class MemoryWorkspaces implements BatteryWorkspaces {
  readonly #source: string;
  readonly #present = new Set<string>();
  #counter = 0;
  /** Every copy made, in order. */
  readonly prepared: string[] = [];
  closed = false;

  constructor(source: string) {
    this.#source = source;
  }

  async prepare(cell: CellKey, signal: AbortSignal): Promise<CellWorkspace> {
    signal.throwIfAborted();
    if (this.closed) throw new Error('the workspaces are closed');
    const path = `${this.#source}#${++this.#counter}-${cell.task}-${cell.repeat}`;
    this.#present.add(path);
    this.prepared.push(path);
    return {
      path,
      dispose: async () => {
        this.#present.delete(path);
      },
    };
  }

  /** The copies not disposed of yet. */
  present(): readonly string[] {
    return [...this.#present];
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

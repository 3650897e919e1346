import type { RunLogReader } from '../../application/runs/run-read-model.ts';
import type { RunLogContents } from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import type { FileRunLogStore } from './file-run-log-store.ts';

/**
 * The runlogs of several runs directories read as one: the config's, and the one a daemon keeps
 * in the repository's git directory (issue 34: its runs were invisible to `fabric runs` and
 * `fabric replay` run inside the repository). Listed newest first; a run is read from the first
 * directory that has it.
 */
export class MergedRunLogs implements RunLogReader {
  readonly #stores: readonly FileRunLogStore[];

  constructor(stores: readonly FileRunLogStore[]) {
    if (stores.length === 0) throw new Error('MergedRunLogs needs a store');
    this.#stores = stores;
  }

  /** Every directory read, the config's first. */
  get runsDirs(): readonly string[] {
    return this.#stores.map((store) => store.runsDir);
  }

  /** The config's runs directory: where a run not found anywhere would be. */
  get runsDir(): string {
    return this.#first.runsDir;
  }

  get #first(): FileRunLogStore {
    return this.#stores[0] as FileRunLogStore;
  }

  pathOf(runId: string): string {
    return this.#first.pathOf(runId);
  }

  async list(): Promise<readonly string[]> {
    const ids = new Set<string>();
    for (const store of this.#stores) for (const id of await store.list()) ids.add(id);
    // Run ids start with a UTC timestamp, so name order is time order.
    return [...ids].sort().reverse();
  }

  async read(ref: string): Promise<RunLogContents> {
    // A path names its runlog itself, wherever it is.
    if (ref.includes('/') || ref.endsWith('.jsonl')) return this.#first.read(ref);
    let firstMiss: unknown;
    for (const store of this.#stores) {
      try {
        return await store.read(ref);
      } catch (error) {
        if (
          !(error instanceof FabricError) ||
          error.code !== 'run_not_found' ||
          /matches \d+ runs/.test(error.message)
        )
          throw error;
        firstMiss ??= error;
      }
    }
    if (this.#stores.length === 1) throw firstMiss;
    throw new FabricError(
      'run_not_found',
      `No run "${ref}" in ${this.runsDirs.join(' or ')}. \`fabric runs\` lists the runs.`,
    );
  }
}

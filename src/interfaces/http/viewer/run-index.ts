import type { RunFilter, RunReadModel } from '../../../application/runs/run-read-model.ts';
import { newestStartFirst } from '../../../application/runs/run-record.ts';
import type { RunEvent } from '../../../domain/run-events.ts';
import { type RunView, runViewOf } from '../run-view.ts';

/** Ended runs whose records are kept, so paging and filtering do not re-read their runlogs. */
export const VIEWER_CACHED_RUNS = 5000;

/** What the runs list asks for. */
export type RunQuery = RunFilter;

/** One page of runs, newest first, and whether older ones match too. */
export interface RunPage {
  readonly runs: readonly RunView[];
  readonly more: boolean;
}

/**
 * The runs as the viewer lists them: the read model's, over the runs live in this
 * server and those in the runlogs, as the API views them. Build its model with
 * `cacheEnded: VIEWER_CACHED_RUNS`: a run that has ended never changes.
 */
export class RunIndex {
  readonly #runs: Pick<RunReadModel, 'list' | 'show' | 'read'>;

  constructor(runs: Pick<RunReadModel, 'list' | 'show' | 'read'>) {
    this.#runs = runs;
  }

  /** A page of runs matching the query. Unreadable runlogs are left out, as in `GET /v1/runs`. */
  async page(query: RunQuery): Promise<RunPage> {
    const { runs, more } = await this.#runs.list(query);
    // Run ids sort by the second they were made in, then by a random suffix: within a page, runs
    // of the same second are put in the order they started. (Pages themselves follow the ids.)
    return { runs: [...runs].sort(newestStartFirst).map(runViewOf), more };
  }

  /** The summary of one run (throws `run_not_found` / `runlog_corrupt` as the store does). */
  async view(id: string): Promise<RunView> {
    return runViewOf(await this.#runs.show(id));
  }

  /** One run's events and summary: live from the hub, else from its runlog. */
  async read(id: string): Promise<{ view: RunView; events: readonly RunEvent[] }> {
    const { record, events } = await this.#runs.read(id);
    return { view: runViewOf(record), events };
  }
}

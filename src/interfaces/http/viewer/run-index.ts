import type { LivenessCheck } from '../../../application/process-liveness.ts';
import type { RunLogContents, RunLogStore } from '../../../application/ports.ts';
import type { RunEvent } from '../../../domain/run-events.ts';
import type { RunHub } from '../run-hub.ts';
import { type RunView, runView } from '../run-view.ts';

/** Ended runs whose summaries are kept, so paging and filtering do not re-read their runlogs. */
const MAX_CACHED = 5000;

/** What the runs list asks for. */
export interface RunQuery {
  readonly status?: string | undefined;
  readonly specialist?: string | undefined;
  /** Only runs older than this id (the last one of the previous page). */
  readonly before?: string | undefined;
  readonly limit: number;
}

/** One page of runs, newest first, and whether older ones match too. */
export interface RunPage {
  readonly runs: readonly RunView[];
  readonly more: boolean;
}

/**
 * The runs as the viewer lists them: those live in this server and those in the runlogs, newest
 * first (run ids sort by time). A run that has ended never changes, so its summary is cached;
 * a run without its end is read again each time.
 */
export class RunIndex {
  readonly #store: Pick<RunLogStore, 'read' | 'list'> & { pathOf(id: string): string };
  readonly #hub: RunHub;
  readonly #check: () => LivenessCheck;
  readonly #ended = new Map<string, RunView>();

  constructor(
    store: Pick<RunLogStore, 'read' | 'list'> & { pathOf(id: string): string },
    hub: RunHub,
    check: () => LivenessCheck,
  ) {
    this.#store = store;
    this.#hub = hub;
    this.#check = check;
  }

  /** A page of runs matching the query. Unreadable runlogs are left out, as in `GET /v1/runs`. */
  async page(query: RunQuery): Promise<RunPage> {
    const ids = [...new Set([...this.#hub.list().map((live) => live.runId), ...(await this.#store.list())])]
      .sort()
      .reverse()
      .filter((id) => query.before === undefined || id < query.before);
    const runs: RunView[] = [];
    for (const id of ids) {
      const view = await this.view(id).catch(() => undefined);
      if (view === undefined) continue;
      if (query.status !== undefined && view.status !== query.status) continue;
      if (query.specialist !== undefined && view.specialist !== query.specialist) continue;
      if (runs.length === query.limit) return { runs: newestFirst(runs), more: true };
      runs.push(view);
    }
    return { runs: newestFirst(runs), more: false };
  }

  /** The summary of one run (throws `run_not_found` / `runlog_corrupt` as the store does). */
  async view(id: string): Promise<RunView> {
    const cached = this.#ended.get(id);
    if (cached !== undefined) return cached;
    const { view } = await this.read(id);
    return view;
  }

  /** One run's events and summary: live from the hub, else from its runlog. */
  async read(id: string): Promise<{ view: RunView; events: readonly RunEvent[] }> {
    const live = this.#hub.get(id);
    if (live !== undefined) {
      const events = [...live.events];
      const where = { runlog: this.#store.pathOf(id), torn: false, live: true };
      return { view: runView(id, events, where, this.#check()), events };
    }
    const contents: RunLogContents = await this.#store.read(id);
    const where = { runlog: contents.location, torn: contents.torn, live: false };
    const view = runView(contents.runId, contents.events, where, this.#check());
    if (contents.events.some((event) => event.kind === 'run_end')) this.#remember(contents.runId, view);
    return { view, events: contents.events };
  }

  #remember(id: string, view: RunView): void {
    if (this.#ended.size >= MAX_CACHED) {
      const oldest = this.#ended.keys().next().value;
      if (oldest !== undefined) this.#ended.delete(oldest);
    }
    this.#ended.set(id, view);
  }
}

/**
 * Run ids sort by the second they were made in, then by a random suffix: within a page, runs of
 * the same second are put in the order they started. (Pages themselves follow the ids.)
 */
function newestFirst(runs: RunView[]): RunView[] {
  const key = (run: RunView) => run.started_at ?? '';
  return runs.sort((a, b) => key(b).localeCompare(key(a)) || b.run_id.localeCompare(a.run_id));
}

import type { RunObserver } from '../../application/ports.ts';
import type { LiveRuns } from '../../application/runs/run-read-model.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunResult } from '../../domain/run-result.ts';
import type { RunRequest, RunTask } from '../../application/run/run-request.ts';

/** A run in progress in this server: its events so far, who follows them, and how to stop it. */
export interface LiveRun {
  readonly runId: string;
  readonly controller: AbortController;
  /** Every event written so far, in seq order. */
  readonly events: RunEvent[];
  /** The last seq of a resumed run's runlog before this process went on with it (0 for a new run). */
  readonly backlogSeq: number;
  readonly subscribers: Set<(event: RunEvent) => void>;
  /** Settles when the run has ended and its runlog is closed: the result, or null if it never started. */
  readonly settled: Promise<RunResult | null>;
}

/** What starting a run takes: a `RunRequest` whose id and cancellation the hub owns. */
export type HubRunRequest = Omit<RunRequest, 'runId' | 'signal'> & { readonly signal?: AbortSignal };

/** What the hub starts runs with (a Fabric is one): the run use case, and the one minter of run ids. */
export interface HubRunner {
  readonly run: RunTask;
  newRunId(): string;
}

/**
 * The runs this server has in flight, each a fan-out observer: SSE streams subscribe to it, the
 * routes read its status, cancel aborts it, and `close` stops them all. A run leaves the hub once
 * its runlog is complete, after which the runlog is the record.
 */
export class RunHub {
  readonly #runner: HubRunner;
  readonly #runs = new Map<string, LiveRun>();
  readonly #watchers = new Set<(runId: string, event: RunEvent) => void>();

  constructor(runner: HubRunner) {
    this.#runner = runner;
  }

  /**
   * Starts a run and resolves once its runlog has `run_start`, so errors before that (unknown
   * specialist, no model, a pack that fails to build) reject here instead of ending a run.
   */
  async start(request: HubRunRequest): Promise<LiveRun> {
    let started: () => void = () => {};
    const hasStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { live, result } = this.#launch(request, started);
    await Promise.race([hasStarted, result]);
    return live;
  }

  /**
   * Resumes a run (SPEC §18) and resolves once its runlog has `run_resumed`, so refusals reject
   * here. `backlog` is the runlog so far: followers and readers of the live run see it whole.
   */
  async resume(
    runId: string,
    backlog: readonly RunEvent[],
    resume: (observer: RunObserver, signal: AbortSignal) => Promise<RunResult>,
  ): Promise<LiveRun> {
    let started: () => void = () => {};
    const hasStarted = new Promise<void>((resolve) => {
      started = resolve;
    });
    const { live, result } = this.#launch({ specialist: '', task: '' }, started, {
      runId,
      backlog,
      run: (request) => resume(request.observers?.[0] as RunObserver, request.signal),
    });
    await Promise.race([hasStarted, result]);
    return live;
  }

  /**
   * Resumes a run to its end (the MCP server's `resume_run`); live here while it lasts, as one
   * resumed through `resume`. A refusal rejects the result.
   */
  resumeToEnd(
    runId: string,
    backlog: readonly RunEvent[],
    resume: (observer: RunObserver, signal: AbortSignal) => Promise<RunResult>,
    signal: AbortSignal,
  ): Promise<RunResult> {
    return this.#launch({ specialist: '', task: '', signal }, () => {}, {
      runId,
      backlog,
      run: (request) => resume(request.observers?.[0] as RunObserver, request.signal),
    }).result;
  }

  /** Runs to the end (the MCP server's `run_task`); the run is live here while it lasts. */
  run(request: HubRunRequest): Promise<RunResult> {
    return this.#launch(request, () => {}).result;
  }

  /** The live run with this id. */
  get(runId: string): LiveRun | undefined {
    return this.#runs.get(runId);
  }

  /** The live runs, newest first. */
  list(): LiveRun[] {
    return [...this.#runs.values()].sort((a, b) => (a.runId < b.runId ? 1 : -1));
  }

  /**
   * Sends the events after `afterSeq` to `onEvent`, then each new one as it is written.
   * Returns how to stop following, or undefined when the run is not live.
   */
  follow(runId: string, afterSeq: number, onEvent: (event: RunEvent) => void): (() => void) | undefined {
    const live = this.#runs.get(runId);
    if (live === undefined) return undefined;
    // Backlog and subscription in one synchronous step, so no event falls between them.
    for (const event of live.events) if (event.seq > afterSeq) onEvent(event);
    live.subscribers.add(onEvent);
    return () => live.subscribers.delete(onEvent);
  }

  /**
   * Calls `onEvent` with every event of every live run, those that start later included (the
   * viewer's live runs list). Returns how to stop watching.
   */
  watch(onEvent: (runId: string, event: RunEvent) => void): () => void {
    this.#watchers.add(onEvent);
    return () => this.#watchers.delete(onEvent);
  }

  /** Cancels every live run and waits until each has written its `run_end`. */
  async close(reason = 'the server is shutting down'): Promise<void> {
    const runs = [...this.#runs.values()];
    for (const live of runs) live.controller.abort(new Error(reason));
    await Promise.all(runs.map((live) => live.settled));
  }

  #launch(
    request: HubRunRequest,
    onStarted: () => void,
    resumed?: {
      readonly runId: string;
      readonly backlog: readonly RunEvent[];
      readonly run: RunTask;
    },
  ): { live: LiveRun; result: Promise<RunResult> } {
    const runId = resumed?.runId ?? this.#runner.newRunId();
    const controller = new AbortController();
    const signal =
      request.signal === undefined ? controller.signal : AbortSignal.any([controller.signal, request.signal]);
    const events: RunEvent[] = [...(resumed?.backlog ?? [])];
    const subscribers = new Set<(event: RunEvent) => void>();
    const watchers = this.#watchers;
    const fanOut: RunObserver = {
      onEvent(event) {
        events.push(event);
        if (event.kind === 'run_start' || event.kind === 'run_resumed') onStarted();
        for (const subscriber of subscribers) {
          try {
            subscriber(event);
          } catch {
            // A stream that broke must not stop the others, nor the run.
          }
        }
        for (const watcher of watchers) {
          try {
            watcher(runId, event);
          } catch {
            // Likewise for a watcher of every run.
          }
        }
      },
      onText() {},
      onToolCallStarted() {},
    };
    const runRequest = { ...request, runId, signal, observers: [fanOut, ...(request.observers ?? [])] };
    // Called on the runner, not detached from it (a Fabric's run uses its own fields).
    const result = resumed === undefined ? this.#runner.run(runRequest) : resumed.run(runRequest);
    const settled = result.then(
      (value) => value,
      () => null,
    );
    const backlogSeq = resumed?.backlog.at(-1)?.seq ?? 0;
    const live: LiveRun = { runId, controller, events, backlogSeq, subscribers, settled };
    this.#runs.set(runId, live);
    // A refused resume of a run live here already must not take the live one off the list.
    void settled.then(() => {
      if (this.#runs.get(runId) === live) this.#runs.delete(runId);
    });
    return { live, result };
  }
}

/** The hub's runs as the read model of runs sees them. */
export function liveRuns(hub: Pick<RunHub, 'get' | 'list'>): LiveRuns {
  return {
    liveRunIds: () => hub.list().map((live) => live.runId),
    liveEvents: (runId) => hub.get(runId)?.events,
  };
}

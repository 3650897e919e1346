/**
 * Re-executing a recorded run (`fabric replay --execute`, `POST /v1/runs/:id/replay`): the
 * recorded model turns answer the loop, the tools run for real in a fresh copy of the workspace,
 * and the new events are compared with the log. The use case of SPEC §6's replay; it reaches the
 * world through the ports below, wired in `src/composition/replay.ts`.
 */
import { RecordedApprovals } from './recorded-approvals.ts';
import type { KeptOutputs } from '../run/output-budget.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import type { Clock, RunLogContents, RunLogStore, RunObserver, SpecialistPack } from '../ports.ts';
import { executeTask } from '../run/execute-task.ts';
import { type ReplayComparison, compareReplay, replayNormalizer } from './compare-replay.ts';
import { ReplayChatClient } from './replay-chat-client.ts';
import { lastStepLimit } from './run-history.ts';

/** What the re-run did, beside the comparison. */
export interface ReplaySummary {
  readonly run_id: string;
  readonly status: RunStatus;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly steps: number;
  readonly events: number;
  readonly turns_recorded: number;
  readonly turns_used: number;
}

/** The outcome of `RunReplay.execute`. `cancelled` means nothing was compared. */
export interface ReplayReport {
  readonly cancelled: boolean;
  readonly comparison: ReplayComparison;
  readonly replay: ReplaySummary;
  readonly workspace: {
    readonly source: string | null;
    readonly copy: string | null;
    readonly kept: boolean;
  };
}

/** What `RunReplay.execute` needs besides the run. */
export interface ReplayOptions {
  /** The absolute workspace to copy, or null for a run without one. */
  readonly source: string | null;
  /** Keep the copy afterwards (it is removed otherwise). */
  readonly keep: boolean;
  readonly observers: readonly RunObserver[];
  readonly signal: AbortSignal;
}

/** A copy of a workspace made for one replay. */
export interface ReplayWorkspace {
  /** The copy: a directory under its source's own name. */
  readonly path: string;
  /** Removes the copy and what was made to hold it. */
  dispose(): Promise<void>;
}

/** The ports of the replay use case. */
export interface ReplayDeps {
  /**
   * Copies a workspace, `.git/` and the runs directory included (its copy re-executes a recorded
   * run in a tree as close to the original as it can), into a new temporary place. Throws a
   * usage error when the source is not a directory.
   */
  readonly copyWorkspace: (source: string) => Promise<ReplayWorkspace>;
  /** Builds the specialist's pack from the current config, for this workspace (none: no workspace). */
  readonly buildPack: (specialist: string, workspace: string | undefined) => Promise<SpecialistPack>;
  /** A fresh store for the re-run's runlog, which is a check and not a new run: not under runs/. */
  readonly runLogStore: () => RunLogStore;
  /** Where the re-run keeps whole outputs it cuts to the original's window, as the run did. */
  readonly keptOutputs?: () => KeptOutputs;
  readonly clock: Clock;
  readonly settings: {
    /** The config's `loop.recover_text_tool_calls`, for a run whose log does not show its own. */
    readonly recoverTextToolCalls: boolean;
    readonly configDigest: string;
    readonly fabricVersion: string;
  };
}

/** The run's `run_start` line; a run without one cannot be re-run (a usage error). */
export function runStartOf(run: RunLogContents): Extract<RunEvent, { kind: 'run_start' }> {
  const start = run.events.find((event) => event.kind === 'run_start');
  if (start?.kind !== 'run_start')
    throw new FabricError('usage', `${run.location} has no run_start line, so it cannot be re-run.`);
  return start;
}

/** The replay use case: re-runs a run's recorded model turns with real tools and compares. */
export class RunReplay {
  readonly #deps: ReplayDeps;

  constructor(deps: ReplayDeps) {
    this.#deps = deps;
  }

  /** Re-runs the recorded model turns in a copy of `options.source` and compares the tool results. */
  async execute(run: RunLogContents, options: ReplayOptions): Promise<ReplayReport> {
    const copy = options.source === null ? null : await this.#deps.copyWorkspace(options.source);
    try {
      const replay = await this.#reExecute(run, copy?.path ?? null, options);
      const comparison = compareReplay(
        run.events,
        replay.events,
        replayNormalizer({
          original: { workspace: runStartOf(run).workspace, runId: run.runId },
          replayed: { workspace: copy?.path ?? null, runId: replay.summary.run_id },
        }),
      );
      return {
        cancelled: options.signal.aborted,
        comparison,
        replay: replay.summary,
        workspace: {
          source: options.source,
          copy: copy?.path ?? null,
          kept: options.keep && copy !== null,
        },
      };
    } finally {
      if (copy && !options.keep) await copy.dispose();
    }
  }

  async #reExecute(
    run: RunLogContents,
    workspace: string | null,
    options: ReplayOptions,
  ): Promise<{ events: readonly RunEvent[]; summary: ReplaySummary }> {
    const { settings } = this.#deps;
    const start = runStartOf(run);
    const pack = await this.#deps.buildPack(start.specialist, workspace ?? undefined);
    const chat = new ReplayChatClient(run.events);
    const store = this.#deps.runLogStore();
    const has = (kind: RunEvent['kind']) => run.events.some((event) => event.kind === kind);
    const result = await executeTask({
      specialist: start.specialist,
      task: start.task,
      pack,
      chat,
      model: { id: start.model, backend: `replay of ${start.backend}` },
      runLogStore: store,
      observers: options.observers,
      limits: {
        // A resumed run went on under its last resume's limit (`--max-steps N` more).
        maxSteps: lastStepLimit(run.events, start),
        budgetMs: start.budget_s * 1000,
        // The run's setting is not logged; what it did shows it, else the current config decides.
        recoverTextToolCalls: has('tool_call_recovered')
          ? true
          : has('text_fallback')
            ? false
            : settings.recoverTextToolCalls,
      },
      workspace,
      configDigest: settings.configDigest,
      fabricVersion: settings.fabricVersion,
      clock: this.#deps.clock,
      signal: options.signal,
      runId: `${run.runId}.replay`,
      // Results are cut to the window the run had, so the re-run's results read as the run's did.
      ...(start.window_tokens === undefined ? {} : { windowTokens: start.window_tokens }),
      ...(this.#deps.keptOutputs === undefined ? {} : { outputs: this.#deps.keptOutputs() }),
      // What a person answered in the run is answered again; nothing else is asked (SPEC §19).
      approvals: {
        store: new RecordedApprovals(run.events),
        mode: 'deny',
        specialist: start.specialist,
        now: () => this.#deps.clock.now(),
      },
    });
    const events = (await store.read(result.run_id)).events;
    return {
      events,
      summary: {
        run_id: result.run_id,
        status: result.status,
        error: result.error,
        steps: result.steps,
        events: events.length,
        turns_recorded: chat.recorded,
        turns_used: chat.used,
      },
    };
  }
}

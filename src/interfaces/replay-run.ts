/**
 * Re-executing a recorded run (`fabric replay --execute`, `POST /v1/runs/:id/replay`): the
 * recorded model turns answer the loop, the tools run for real in a fresh copy of the workspace,
 * and the new events are compared with the log.
 */
import { cp, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  type ReplayComparison,
  compareReplay,
  replayNormalizer,
} from '../application/replay/compare-replay.ts';
import { executeTask } from '../application/run/execute-task.ts';
import type { RunLogContents, RunObserver } from '../application/ports.ts';
import { ReplayChatClient } from '../application/replay/replay-chat-client.ts';
import { FabricError } from '../domain/errors.ts';
import type { RunEvent } from '../domain/run-events.ts';
import type { RunStatus } from '../domain/run-result.ts';
import { MemoryRunLogStore } from '../infrastructure/runlog/memory-run-log-store.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { isLeftOut } from '../infrastructure/workspace/left-out.ts';
import type { Fabric } from '../composition/fabric.ts';
import { FABRIC_VERSION } from '../composition/version.ts';

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

/** The outcome of `replayExecute`. `cancelled` means nothing was compared. */
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

/** What `replayExecute` needs besides the run. */
export interface ReplayOptions {
  /** The absolute workspace to copy, or null for a run without one. */
  readonly source: string | null;
  /** Keep the copy afterwards (it is removed otherwise). */
  readonly keep: boolean;
  readonly observers: readonly RunObserver[];
  readonly signal: AbortSignal;
}

/** The run's `run_start` line; a run without one cannot be re-run (a usage error). */
export function runStartOf(run: RunLogContents): Extract<RunEvent, { kind: 'run_start' }> {
  const start = run.events.find((event) => event.kind === 'run_start');
  if (start?.kind !== 'run_start')
    throw new FabricError('usage', `${run.location} has no run_start line, so it cannot be re-run.`);
  return start;
}

/** Re-runs the recorded model turns in a copy of `options.source` and compares the tool results. */
export async function replayExecute(
  fabric: Fabric,
  run: RunLogContents,
  options: ReplayOptions,
): Promise<ReplayReport> {
  const copy = options.source === null ? null : await copyWorkspace(options.source);
  try {
    const replay = await reExecute(fabric, run, copy?.workspace ?? null, options);
    const comparison = compareReplay(
      run.events,
      replay.events,
      replayNormalizer({
        original: { workspace: runStartOf(run).workspace, runId: run.runId },
        replayed: { workspace: copy?.workspace ?? null, runId: replay.summary.run_id },
      }),
    );
    return {
      cancelled: options.signal.aborted,
      comparison,
      replay: replay.summary,
      workspace: {
        source: options.source,
        copy: copy?.workspace ?? null,
        kept: options.keep && copy !== null,
      },
    };
  } finally {
    if (copy && !options.keep) await rm(copy.dir, { recursive: true, force: true });
  }
}

/** Copies the workspace, `.git/` and the runs directory included, into a new temp directory under its own name. */
async function copyWorkspace(source: string): Promise<{ dir: string; workspace: string }> {
  const info = await stat(source).catch(() => undefined);
  if (!info?.isDirectory())
    throw new FabricError('usage', `The workspace ${source} is not a directory; pass --workspace DIR.`);
  const dir = await mkdtemp(join(tmpdir(), 'fabric-replay-'));
  const workspace = join(dir, basename(source));
  await cp(source, workspace, {
    recursive: true,
    verbatimSymlinks: true,
    filter: (path) => !isLeftOut(source, path, { keepGit: true }),
  });
  return { dir, workspace };
}

async function reExecute(
  fabric: Fabric,
  run: RunLogContents,
  workspace: string | null,
  options: ReplayOptions,
): Promise<{ events: readonly RunEvent[]; summary: ReplaySummary }> {
  const start = runStartOf(run);
  const pack = await fabric.registry.getPack(start.specialist, workspace === null ? {} : { workspace });
  const chat = new ReplayChatClient(run.events);
  const store = new MemoryRunLogStore();
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
      maxSteps: start.max_steps,
      budgetMs: start.budget_s * 1000,
      // The run's setting is not logged; what it did shows it, else the current config decides.
      recoverTextToolCalls: has('tool_call_recovered')
        ? true
        : has('text_fallback')
          ? false
          : fabric.config.loop.recover_text_tool_calls,
    },
    workspace,
    configDigest: fabric.config.digest,
    fabricVersion: FABRIC_VERSION,
    clock: systemClock,
    signal: options.signal,
    runId: `${run.runId}.replay`,
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

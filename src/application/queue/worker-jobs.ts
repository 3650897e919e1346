/**
 * What a `fabric worker` does with a job it took (SPEC §2: the worker's job handling is
 * a use case): a queued run goes through the run use case with the id the server answered; a
 * battery cell goes to the cell-job port, which runs it and its checks and reports the outcome.
 * Reaches the world only through ports. Nothing here does I/O.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunResult } from '../../domain/run-result.ts';
import type { RunTask } from '../run/run-request.ts';
import type { QueuedCell, QueuedRun, RunLease, WorkerLog } from './queue-ports.ts';

/** A queued run that is a battery cell. */
export type QueuedCellRun = QueuedRun & { readonly cell: QueuedCell };

/**
 * Runs a queued battery cell (its run, then its `expect` checks) and reports its outcome.
 * Rejects, after reporting, when the cell's run could not start.
 */
export type QueuedCellJob = (
  run: QueuedCellRun,
  signal: AbortSignal,
  onNotice: (message: string) => void,
) => Promise<void>;

/** What the job handling is built from. */
export interface WorkerJobsDeps {
  /** The run use case, on the worker's own Fabric. */
  readonly runTask: RunTask;
  /**
   * The resume use case (SPEC §18) on the worker's Fabric, for a run whose worker died: its
   * lease expired, so its old process counts as gone wherever it ran.
   */
  readonly resumeTask: (request: {
    readonly run: string;
    readonly signal: AbortSignal;
    readonly onNotice: (message: string) => void;
    readonly fence?: () => Error | undefined;
  }) => Promise<RunResult>;
  /** Battery cells' jobs. */
  readonly cellJob: QueuedCellJob;
  /** The worker's log; each run's notices go there, prefixed with the run's id. */
  readonly log: WorkerLog;
}

/**
 * What a `QueueWorker` executes each job with (its lease is fenced by the composition). It rejects when the run could not start (no
 * model, a pack that fails), so the worker records the run as not started.
 */
export function workerJobs({
  runTask,
  resumeTask,
  cellJob,
  log,
}: WorkerJobsDeps): (
  run: QueuedRun,
  signal: AbortSignal,
  lease?: RunLease,
  fence?: () => Error | undefined,
) => Promise<void> {
  return async (run, signal, lease, fence) => {
    const held = fence === undefined ? {} : { fence };
    const onNotice = (message: string) => log(`run ${run.runId}: ${message}`, { run_id: run.runId });
    if ((lease?.resumes ?? 0) > 0) {
      if (run.cell !== undefined)
        throw new FabricError(
          'run_not_resumable',
          'a battery cell runs in its own copy of the battery workspace and is not resumed by another worker; run the battery again for it.',
        );
      await resumeTask({ run: run.runId, signal, onNotice, ...held });
      return;
    }
    if (run.cell !== undefined) {
      await cellJob({ ...run, cell: run.cell }, signal, onNotice);
      return;
    }
    await runTask({
      specialist: run.specialist,
      task: run.task,
      workspace: run.workspace,
      model: run.model,
      maxSteps: run.maxSteps,
      runId: run.runId,
      signal,
      onNotice,
      ...held,
    });
  };
}

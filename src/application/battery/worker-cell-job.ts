/**
 * A battery cell on a `fabric worker`: the battery's archive unpacked into a fresh
 * directory, the run, then its `expect` checks there (the worker has the toolchain), and the
 * outcome reported to the queue's database for the battery's runner to collect.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { CellReports, QueuedRun } from '../queue/queue-ports.ts';
import type { RunTask } from '../run/run-request.ts';
import type { CellRunRequest, CellWorkspaces, ExpectChecks } from './battery-ports.ts';
import { type CellOutcome, LocalCellExecutor } from './cell-executor.ts';

/** What a worker's cell job needs. */
export interface CellJobPorts {
  /** Runs the cell's run on this worker (under the id the battery gave it). */
  readonly runTask: RunTask;
  /** A specialist's `expect` checks: its sandbox and allowlist. */
  readonly checksFor: (specialist: string) => ExpectChecks;
  /** Fresh copies of the battery's workspace, unpacked from its archive on the queue. */
  readonly workspacesFromArchive: (archive: string) => CellWorkspaces;
  /** Where the outcome goes: the battery's runner collects it there. */
  readonly reports: Pick<CellReports, 'report'>;
  /** A run's events, read back from its runlog (the checks and per-model figures read them). */
  readonly readRunlog?: (ref: string) => Promise<readonly RunEvent[]>;
  /** Waits between attempts at reporting; default a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/** A queued run that is a battery cell. */
export type QueuedCellRun = QueuedRun & { readonly cell: NonNullable<QueuedRun['cell']> };

const NO_WORKSPACE: CellWorkspaces = {
  prepare: () => Promise.reject(new Error('the battery has no workspace')),
};

/**
 * Runs a queued cell and reports its outcome. Rejects (after reporting) when its run could not
 * start, so the worker marks the run's row as not started, as for any queued run.
 */
export async function executeQueuedCell(
  ports: CellJobPorts,
  run: QueuedCellRun,
  signal: AbortSignal,
  onNotice: (message: string) => void,
): Promise<void> {
  const { archive, spec } = run.cell;
  const workspaces = archive === undefined ? NO_WORKSPACE : ports.workspacesFromArchive(archive);
  const runner = {
    run: (request: CellRunRequest) =>
      ports.runTask({
        specialist: run.specialist,
        task: request.task,
        workspace: request.workspace,
        model: request.model,
        maxSteps: request.maxSteps,
        tags: request.tags,
        runId: run.runId,
        signal: request.signal,
        onNotice,
      }),
    ...(ports.readRunlog === undefined ? {} : { events: ports.readRunlog }),
  };
  const executor = new LocalCellExecutor(runner, workspaces, ports.checksFor(run.specialist));
  let outcome: CellOutcome = await executor.execute(
    {
      cell: { task: spec.id, model: run.model ?? '', repeat: Number(run.tags?.repeat ?? 1) },
      spec,
      maxSteps: run.maxSteps,
      tags: run.tags ?? {},
      hasWorkspace: archive !== undefined,
    },
    signal,
  );
  if (outcome.kind === 'stopped') {
    // The worker is shutting down (or the battery was stopped): a cell not done, which a
    // `--resume` runs again.
    outcome = { kind: 'not_run', error: 'The worker running the cell stopped before the cell ended.' };
  }
  await reportWithRetries(ports, run.runId, outcome);
  if (outcome.kind === 'not_run') throw new FabricError('internal', outcome.error);
}

/** The outcome is the battery's only news of the cell: a blip of the database must not lose it. */
async function reportWithRetries(ports: CellJobPorts, runId: string, outcome: CellOutcome): Promise<void> {
  const sleep = ports.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (let attempt = 1; ; attempt++) {
    try {
      await ports.reports.report(runId, outcome);
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      await sleep(200 * attempt);
    }
  }
}

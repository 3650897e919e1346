/**
 * A battery cell on a `fabric worker` (issue 17): the battery's archive unpacked into a fresh
 * directory, the run, then its `expect` checks there (the worker has the toolchain), and the
 * outcome reported to the queue's database for the battery's runner to collect.
 */
import { type CellOutcome, LocalCellExecutor } from './cell-executor.ts';
import type { CellRunRequest, CellWorkspaces } from './battery-ports.ts';
import type { QueuedRun } from '../queue/run-queue.ts';
import { FabricError } from '../../domain/errors.ts';
import { SandboxExpectChecks } from '../../infrastructure/battery/expect-checks.ts';
import type { QueueServices } from '../../infrastructure/queue/open-run-queue.ts';
import { type ArchiveCache, ArchiveWorkspaces } from '../../infrastructure/workspace/archive-workspaces.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { specialistSandbox } from '../../infrastructure/packs/rust/rust-sandbox.ts';

const NO_WORKSPACE: CellWorkspaces = {
  prepare: () => Promise.reject(new Error('the battery has no workspace')),
};

/**
 * Runs a queued cell and reports its outcome. Rejects (after reporting) when its run could not
 * start, so the worker marks the run's row as not started, as for any queued run.
 */
export async function executeQueuedCell(
  fabric: Fabric,
  services: QueueServices,
  archives: ArchiveCache,
  run: QueuedRun & { readonly cell: NonNullable<QueuedRun['cell']> },
  signal: AbortSignal,
  onNotice: (message: string) => void,
): Promise<void> {
  const { archive, spec } = run.cell;
  const workspaces =
    archive === undefined
      ? NO_WORKSPACE
      : new ArchiveWorkspaces(() => archives.get(archive, (id) => services.cells.archive(id)));
  const runner = {
    run: (request: CellRunRequest) =>
      fabric.run({
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
  };
  const checks = new SandboxExpectChecks(specialistSandbox(fabric.registry.config(run.specialist)));
  const executor = new LocalCellExecutor(runner, workspaces, checks);
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
  await reportWithRetries(services, run.runId, outcome);
  if (outcome.kind === 'not_run') throw new FabricError('internal', outcome.error);
}

/** The outcome is the battery's only news of the cell: a blip of the database must not lose it. */
async function reportWithRetries(
  services: QueueServices,
  runId: string,
  outcome: CellOutcome,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await services.cells.report(runId, outcome);
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    }
  }
}

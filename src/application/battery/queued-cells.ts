/**
 * A battery's cells through the Postgres queue (issue 17): the server archives the workspace
 * once, enqueues each cell as a job carrying its task and checks, and waits for the outcome the
 * worker reports (its run and checks). A cell whose worker died is its run, `interrupted`.
 */
import type { BatteryPlan } from './battery-types.ts';
import { type CellExecutor, type CellOutcome, type CellWork, runChecks } from './cell-executor.ts';
import type { ControlReader } from '../control/control-ports.ts';
import { newRunId } from '../run/run-id.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { QueueServices } from '../../infrastructure/queue/open-run-queue.ts';
import { systemClock } from '../../infrastructure/clock.ts';
import { packWorkspace } from '../../infrastructure/workspace/workspace-archive.ts';
import type { Fabric } from '../../composition/fabric.ts';

/** How often a waiting cell looks for its outcome. */
const POLL_MS = 200;
/** A row that says the run ended, with no outcome reported yet, is given this long. */
const GRACE_MS = 10_000;

/**
 * Archives the battery's workspace into the queue's database (once per battery; a resumed one
 * reuses its archive). Throws `workspace_too_large` past `worker.archive_max_mib`.
 */
export async function archiveBatteryWorkspace(
  fabric: Fabric,
  services: QueueServices,
  plan: BatteryPlan,
): Promise<string | undefined> {
  if (plan.workspace === undefined) return undefined;
  const archive = await packWorkspace(
    plan.workspace,
    { maxBytes: fabric.config.worker.archive_max_mib * 1024 * 1024, key: 'worker.archive_max_mib' },
    [fabric.config.runs_dir],
  );
  await services.cells.putArchive(plan.id, archive);
  return plan.id;
}

/** Cells run by `fabric worker`s: each an enqueued run whose worker reports the outcome. */
export class QueuedCellExecutor implements CellExecutor {
  readonly #services: QueueServices;
  readonly #store: Pick<ControlReader, 'getRun'>;
  readonly #specialist: string;
  readonly #archive: string | undefined;

  constructor(
    services: QueueServices,
    store: Pick<ControlReader, 'getRun'>,
    specialist: string,
    archive: string | undefined,
  ) {
    this.#services = services;
    this.#store = store;
    this.#specialist = specialist;
    this.#archive = archive;
  }

  async execute(work: CellWork, signal: AbortSignal): Promise<CellOutcome> {
    const { queue, workers, cells } = this.#services;
    const run = {
      runId: newRunId(systemClock),
      specialist: this.#specialist,
      task: work.spec.task,
      model: work.cell.model,
      maxSteps: work.maxSteps,
      tags: work.tags,
      cell: { archive: this.#archive, spec: work.spec },
    };
    try {
      await workers.recordQueued(run);
      await queue.enqueue(run);
    } catch (error) {
      return { kind: 'not_run', error: `The cell could not be queued: ${errorMessage(error)}` };
    }
    let endedAt: number | undefined;
    for (;;) {
      if (signal.aborted) {
        // Ctrl-C: the worker cancels the run; the cell is not done (`--resume` runs it again).
        await workers.requestCancel(run.runId).catch(() => {});
        return { kind: 'stopped' };
      }
      const outcome = await cells.outcome(run.runId).catch(() => null);
      if (outcome !== null) return outcome;
      const row = await this.#store.getRun(run.runId).catch(() => null);
      if (row?.status === 'interrupted') {
        // Its worker died: the run is interrupted, never run again; no check can run. A cell's
        // status is a run's end (SPEC §12), so the matrix shows it failed, and says why.
        const ran = {
          run_id: run.runId,
          status: 'failed' as const,
          steps: row.steps ?? 0,
          tokens: row.total_tokens ?? 0,
          error: 'the run was interrupted: its worker stopped heartbeating',
        };
        return {
          kind: 'ran',
          run: ran,
          checks: await runChecks(work.spec, ran, undefined, undefined, signal),
        };
      }
      if (row !== null && row.status !== 'queued' && row.status !== 'running') {
        endedAt ??= Date.now();
        if (Date.now() - endedAt > GRACE_MS) {
          const why = row.error?.message ?? `its run ended ${row.status}`;
          return { kind: 'not_run', error: `The worker reported no outcome for the cell: ${why}` };
        }
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

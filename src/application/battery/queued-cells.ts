/**
 * A battery's cells through the Postgres queue: the server archives the workspace
 * once, enqueues each cell as a job carrying its task and checks, and waits for the outcome the
 * worker reports (its run and checks). A cell whose worker died (its lease expired) goes back to
 * the queue once, as a new run: its copy of the workspace is fresh, so running it again is safe.
 */
import { errorMessage } from '../../domain/errors.ts';
import type { ControlReader } from '../control/control-ports.ts';
import type { Clock } from '../ports.ts';
import type { BatteryPlan } from './battery-types.ts';
import { type CellExecutor, type CellOutcome, type CellWork, runChecks } from './cell-executor.ts';
import type { BatteryQueue } from './session-ports.ts';

/** How often a waiting cell looks for its outcome. */
const POLL_MS = 200;
/** A row that says the run ended, with no outcome reported yet, is given this long. */
const GRACE_MS = 10_000;

/**
 * Archives the battery's workspace into the queue's database (once per battery; a resumed one
 * reuses its archive). Throws `workspace_too_large` past `worker.archive_max_mib`.
 */
export async function archiveBatteryWorkspace(
  queue: Pick<BatteryQueue, 'archive' | 'cells'>,
  plan: BatteryPlan,
): Promise<string | undefined> {
  if (plan.workspace === undefined) return undefined;
  await queue.cells.putArchive(plan.id, await queue.archive(plan.workspace));
  return plan.id;
}

/** What a queued cell needs besides the queue. */
export interface QueuedCellPorts {
  readonly queue: Pick<BatteryQueue, 'queue' | 'workers' | 'cells'>;
  /** The control plane's run rows: where a dead worker's run shows `interrupted`. */
  readonly runs: Pick<ControlReader, 'getRun'>;
  /** The cell's run id, minted before it is queued (the worker runs it under that id). */
  readonly newRunId: () => string;
  readonly clock: Clock;
}

/** Cells run by `fabric worker`s: each an enqueued run whose worker reports the outcome. */
export class QueuedCellExecutor implements CellExecutor {
  readonly #ports: QueuedCellPorts;
  readonly #specialist: string;
  readonly #archive: string | undefined;

  constructor(ports: QueuedCellPorts, specialist: string, archive: string | undefined) {
    this.#ports = ports;
    this.#specialist = specialist;
    this.#archive = archive;
  }

  async execute(work: CellWork, signal: AbortSignal): Promise<CellOutcome> {
    const interrupted: string[] = [];
    for (;;) {
      const attempt = await this.#attempt(work, signal);
      if (attempt.kind !== 'interrupted') return attempt.outcome;
      interrupted.push(attempt.runId);
      // Its worker died (its lease expired): the cell's copy is fresh and nothing of it is
      // shared, so it goes back to the queue once, as a new run; the first stays interrupted.
      if (interrupted.length < 2) continue;
      // Twice: no check can run. A cell's status is a run's end (SPEC §12), so the matrix shows
      // it failed, and says why.
      const row = attempt.row;
      const ran = {
        run_id: attempt.runId,
        status: 'failed' as const,
        steps: row.steps ?? 0,
        tokens: row.total_tokens ?? 0,
        error: `the run was interrupted twice, its worker stopped heartbeating each time (runs ${interrupted.join(', ')})`,
        // Dead workers are the infrastructure's failure, not the model's (SPEC §12.1).
        error_code: 'internal',
      };
      return { kind: 'ran', run: ran, checks: await runChecks(work.spec, ran, undefined, undefined, signal) };
    }
  }

  /** One run of the cell: queued, then waited for until its worker reports or it is interrupted. */
  async #attempt(
    work: CellWork,
    signal: AbortSignal,
  ): Promise<
    | { readonly kind: 'done'; readonly outcome: CellOutcome }
    | {
        readonly kind: 'interrupted';
        readonly runId: string;
        readonly row: { readonly steps: number | null; readonly total_tokens: number | null };
      }
  > {
    const { queue, workers, cells } = this.#ports.queue;
    const { clock } = this.#ports;
    const run = {
      runId: this.#ports.newRunId(),
      specialist: this.#specialist,
      task: work.spec.task,
      model: work.cell.model,
      maxSteps: work.maxSteps,
      tags: work.tags,
      cell: { archive: this.#archive, spec: work.spec },
    };
    const done = (outcome: CellOutcome) => ({ kind: 'done' as const, outcome });
    try {
      await workers.recordQueued(run);
      await queue.enqueue(run);
    } catch (error) {
      return done({ kind: 'not_run', error: `The cell could not be queued: ${errorMessage(error)}` });
    }
    let endedAt: number | undefined;
    for (;;) {
      if (signal.aborted) {
        // Ctrl-C: the worker cancels the run; the cell is not done (`--resume` runs it again).
        await workers.requestCancel(run.runId).catch(() => {});
        return done({ kind: 'stopped' });
      }
      const outcome = await cells.outcome(run.runId).catch(() => null);
      if (outcome !== null) return done(outcome);
      const row = await this.#ports.runs.getRun(run.runId).catch(() => null);
      if (row?.status === 'interrupted') return { kind: 'interrupted', runId: run.runId, row };
      if (row !== null && row.status !== 'queued' && row.status !== 'running') {
        endedAt ??= clock.now().getTime();
        if (clock.now().getTime() - endedAt > GRACE_MS) {
          const why = row.error?.message ?? `its run ended ${row.status}`;
          return done({ kind: 'not_run', error: `The worker reported no outcome for the cell: ${why}` });
        }
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}

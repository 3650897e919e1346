/**
 * Submitting a run (SPEC §8): what `POST /v1/runs` does once the body is parsed. With
 * the run queue on, the specialist and the workspace are checked here and the run is queued for
 * a worker (a `queued` control row first, so it is listed at once); the model and the pack are
 * the worker's to find, and its control row says why if it cannot start. Without the queue the
 * run starts in this process and the submission answers once it has (so a missing model or a
 * busy workspace is the answer, not a wait). Nothing here does I/O.
 */
import { FabricError, errorMessage } from '../../domain/errors.ts';
import type { RunResult } from '../../domain/run-result.ts';
import type { RunQueue, WorkerRegistry } from '../queue/queue-ports.ts';
import type { RunRequest } from './run-request.ts';

/** What a submission carries. */
export type SubmittedRun = Pick<RunRequest, 'specialist' | 'task' | 'workspace' | 'model' | 'maxSteps'>;

/** The queue's side of a submission. */
export interface SubmitQueue {
  readonly queue: Pick<RunQueue, 'enqueue'>;
  readonly workers: Pick<WorkerRegistry, 'recordQueued'>;
}

/** A run started in this process, as the submitter sees it. */
export interface StartedRun {
  readonly runId: string;
  /** Settles once the run has ended: its result, or null if it never started. */
  readonly settled: Promise<RunResult | null>;
}

/** What submitting a run reaches. */
export interface SubmitRunDeps {
  /** The run queue when runs go to workers (opening it may throw `queue_unavailable`); null: runs run here. */
  readonly queue: () => Promise<SubmitQueue | null>;
  /** Checks the specialist and the workspace as a run would before anything else. */
  readonly validate: (request: Pick<RunRequest, 'specialist' | 'workspace'>) => Promise<unknown>;
  readonly newRunId: () => string;
  /**
   * Starts a run in this process and resolves once it has started; errors before that (unknown
   * specialist, no model, a pack that fails, a busy workspace) reject.
   */
  readonly startHere: (request: SubmittedRun & Pick<RunRequest, 'waitForWorkspace'>) => Promise<StartedRun>;
}

/** Where a submitted run went. */
export type Submission =
  | { readonly status: 'queued'; readonly runId: string }
  | ({ readonly status: 'running' } & StartedRun);

/** Submits a run: queued for a worker, or started in this process. */
export async function submitRun(deps: SubmitRunDeps, request: SubmittedRun): Promise<Submission> {
  const queue = await deps.queue();
  if (queue === null) {
    // A submission answers once the run has started: a busy workspace is workspace_busy, not a wait.
    const started = await deps.startHere({ ...request, waitForWorkspace: false });
    return { status: 'running', runId: started.runId, settled: started.settled };
  }
  await deps.validate(request);
  const run = {
    runId: deps.newRunId(),
    specialist: request.specialist,
    task: request.task,
    workspace: request.workspace,
    model: request.model,
    maxSteps: request.maxSteps,
  };
  try {
    await queue.workers.recordQueued(run);
    await queue.queue.enqueue(run);
  } catch (error) {
    throw new FabricError(
      'queue_unavailable',
      `The run could not be queued: ${errorMessage(error)}. Check that the Postgres of FABRIC_DSN / control.dsn runs, then send it again.`,
      { cause: error },
    );
  }
  return { status: 'queued', runId: run.runId };
}

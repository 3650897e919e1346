/**
 * The daemon's run port (`TaskRunner`) over the run use case: one specialist run in the
 * repository per attempt, through the narrow `RunTask` port.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunObserver } from '../ports.ts';
import type { RunTask } from '../run/run-request.ts';
import type { TaskRunner, TaskRunResult } from './daemon-ports.ts';

/** Errors that mean no model can be reached: the daemon waits, and spends no attempt on them. */
const BACKEND_DOWN = new Set(['backend_unavailable', 'model_not_found']);

/** How the runner reaches the runs. */
export interface SpecialistTaskRunnerPorts {
  /** Starts a run (the run use case). */
  readonly run: RunTask;
  /** Forgets what the backends were last seen to have, so the next run asks them again. */
  readonly refreshCatalog: () => void;
}

/** Which runs the daemon starts, and who watches them. */
export interface SpecialistTaskRunnerOptions {
  readonly specialist: string;
  /** The repository: the run's workspace. */
  readonly workspace: string;
  readonly model: string | undefined;
  /** Where `model` came from (`--model`, `LM_STUDIO_MODEL`, `daemon.model`), named in the run's model reason. */
  readonly modelFrom?: string | undefined;
  /** Observers for each new run (live progress). */
  readonly observers: () => readonly RunObserver[];
  readonly onNotice?: (message: string) => void;
}

/** One specialist run in the repository per attempt; a backend that is down is said, not thrown. */
export class SpecialistTaskRunner implements TaskRunner {
  readonly #ports: SpecialistTaskRunnerPorts;
  readonly #options: SpecialistTaskRunnerOptions;
  #backendWasDown = false;

  constructor(ports: SpecialistTaskRunnerPorts, options: SpecialistTaskRunnerOptions) {
    this.#ports = ports;
    this.#options = options;
  }

  async run(task: string, signal: AbortSignal, model?: string): Promise<TaskRunResult> {
    if (this.#backendWasDown) {
      // The catalog keeps a failed probe for 30 s; the daemon's backoff (capped at --interval) must
      // ask the backends again.
      this.#ports.refreshCatalog();
    }
    // A model given here is escalation's, from daemon.models.
    const from = model !== undefined ? 'daemon.models' : this.#options.modelFrom;
    const outcome = await this.#run(task, signal, model ?? this.#options.model, from);
    this.#backendWasDown = outcome.kind === 'backend_down';
    return outcome;
  }

  async #run(
    task: string,
    signal: AbortSignal,
    model: string | undefined,
    modelFrom: string | undefined,
  ): Promise<TaskRunResult> {
    try {
      const result = await this.#ports.run({
        specialist: this.#options.specialist,
        task,
        workspace: this.#options.workspace,
        model,
        modelFrom,
        observers: this.#options.observers(),
        signal,
        ...(this.#options.onNotice === undefined ? {} : { onNotice: this.#options.onNotice }),
      });
      if (result.status === 'failed' && result.error !== null && BACKEND_DOWN.has(result.error.code)) {
        return { kind: 'backend_down', message: result.error.message };
      }
      return { kind: 'ran', result };
    } catch (error) {
      if (signal.aborted) return { kind: 'cancelled' };
      if (error instanceof FabricError && BACKEND_DOWN.has(error.code)) {
        // Whole: the servers asked and the fix, as `fabric run` prints them (issue 34).
        return { kind: 'backend_down', message: error.message };
      }
      throw error;
    }
  }
}

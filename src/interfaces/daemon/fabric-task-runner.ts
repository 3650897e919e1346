import type { TaskRunner, TaskRunResult } from '../../application/daemon/daemon-ports.ts';
import type { RunObserver } from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import type { Fabric } from '../../composition/fabric.ts';

/** Errors that mean no model can be reached: the daemon waits, and spends no attempt on them. */
const BACKEND_DOWN = new Set(['backend_unavailable', 'model_not_found']);

/** Which runs the daemon starts, and who watches them. */
export interface FabricTaskRunnerOptions {
  readonly specialist: string;
  /** The repository: the run's workspace. */
  readonly workspace: string;
  readonly model: string | undefined;
  /** Observers for each new run (live progress). */
  readonly observers: () => readonly RunObserver[];
  readonly onNotice?: (message: string) => void;
}

/** The daemon's run port over the Fabric: one specialist run in the repository per attempt. */
export class FabricTaskRunner implements TaskRunner {
  readonly #fabric: Fabric;
  readonly #options: FabricTaskRunnerOptions;
  #backendWasDown = false;

  constructor(fabric: Fabric, options: FabricTaskRunnerOptions) {
    this.#fabric = fabric;
    this.#options = options;
  }

  async run(task: string, signal: AbortSignal): Promise<TaskRunResult> {
    if (this.#backendWasDown) {
      // The catalog keeps a failed probe for 30 s; the daemon's backoff (capped at --interval) must
      // ask the backends again.
      this.#fabric.refreshCatalog();
    }
    const outcome = await this.#run(task, signal);
    this.#backendWasDown = outcome.kind === 'backend_down';
    return outcome;
  }

  async #run(task: string, signal: AbortSignal): Promise<TaskRunResult> {
    try {
      const result = await this.#fabric.run({
        specialist: this.#options.specialist,
        task,
        workspace: this.#options.workspace,
        model: this.#options.model,
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
        return { kind: 'backend_down', message: error.message.split('\n')[0] ?? error.message };
      }
      throw error;
    }
  }
}

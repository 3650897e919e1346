/**
 * The daemon's run port (`TaskRunner`) over the run use case: one specialist run in the
 * repository per attempt, through the narrow `RunTask` port.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunResult } from '../../domain/run-result.ts';
import { callText } from '../../domain/approvals.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { ApprovalStore } from '../approvals/approval-store.ts';
import type { RunObserver } from '../ports.ts';
import type { ResumeRequest } from '../run/resume-run.ts';
import type { RunTask } from '../run/run-request.ts';
import type { ParkedRunState, TaskResumeResult, TaskRunner, TaskRunResult } from './daemon-ports.ts';

/** The resumer the daemon's runs name (`run_start.resumer`): nobody else goes on with them. */
export const DAEMON_RESUMER = 'daemon';

/** Errors that mean no model can be reached: the daemon waits, and spends no attempt on them. */
const BACKEND_DOWN = new Set(['backend_unavailable', 'model_not_found']);

/** How the runner reaches the runs. */
export interface SpecialistTaskRunnerPorts {
  /** Starts a run (the run use case). */
  readonly run: RunTask;
  /** Goes on with a run its process left (the resume use case, SPEC §18). */
  readonly resume?: (request: ResumeRequest) => Promise<RunResult>;
  /** Forgets what the backends were last seen to have, so the next run asks them again. */
  readonly refreshCatalog: () => void;
  /** Parking (SPEC §19): the approvals, a run's record, and ending a parked run. Absent: runs never park. */
  readonly parking?: {
    readonly approvals: Pick<ApprovalStore, 'list'>;
    readonly runEvents: (runId: string) => Promise<readonly RunEvent[]>;
    readonly cancelParked: (runId: string) => Promise<void>;
  };
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

  async run(task: string, signal: AbortSignal, model?: string, runId?: string): Promise<TaskRunResult> {
    return this.#guarded(
      () =>
        this.#ports.run({
          specialist: this.#options.specialist,
          task,
          workspace: this.#options.workspace,
          model: model ?? this.#options.model,
          // A model given here is escalation's, from daemon.models.
          modelFrom: model !== undefined ? 'daemon.models' : this.#options.modelFrom,
          observers: this.#options.observers(),
          signal,
          ...this.#approvalDefaults(),
          ...(runId === undefined ? {} : { runId }),
          ...(this.#options.onNotice === undefined ? {} : { onNotice: this.#options.onNotice }),
        }),
      signal,
    );
  }

  /** Goes on with the run a killed daemon left; a refusal (`run_not_resumable`) is said, not thrown. */
  async resume(runId: string, signal: AbortSignal): Promise<TaskResumeResult> {
    const resume = this.#ports.resume;
    if (resume === undefined) return { kind: 'not_resumable', reason: 'this daemon cannot resume runs' };
    try {
      return await this.#guarded(
        () =>
          resume({
            run: runId,
            observers: this.#options.observers(),
            signal,
            ...this.#approvalDefaults(),
            ...(this.#options.onNotice === undefined ? {} : { onNotice: this.#options.onNotice }),
          }),
        signal,
      );
    } catch (error) {
      // Refused, or its runlog is missing or unreadable: the attempt starts again.
      if (error instanceof FabricError) return { kind: 'not_resumable', reason: error.message };
      throw error;
    }
  }

  async parked(runId: string): Promise<ParkedRunState> {
    const parking = this.#ports.parking;
    if (parking === undefined) return { kind: 'ended', status: 'unknown' };
    // Asked each second while the daemon idles: a pending approval says enough, and the runlog
    // (read whole) is read only once none is — a run cancelled meanwhile has none pending either.
    const [pending] = await parking.approvals.list({ runId, state: 'pending' });
    if (pending !== undefined)
      return { kind: 'waiting', approval: { id: pending.id, call: callText(pending) } };
    const last = (await parking.runEvents(runId)).at(-1);
    if (last?.kind !== 'run_end') return { kind: 'ended', status: 'running' };
    return last.status === 'awaiting_approval'
      ? { kind: 'answered' }
      : { kind: 'ended', status: last.status };
  }

  async cancelParked(runId: string): Promise<void> {
    await this.#ports.parking?.cancelParked(runId);
  }

  /**
   * A call that needs approval parks the run (SPEC §19): the daemon sets its edits aside and goes
   * on with other changes, and only the daemon resumes it. A daemon that cannot park refuses
   * the call at once (`deny`); `policy.on_approval` overrides either.
   */
  #approvalDefaults() {
    return this.#ports.parking === undefined
      ? ({ defaultOnApproval: 'deny' } as const)
      : ({ defaultOnApproval: 'park', resumer: DAEMON_RESUMER } as const);
  }

  async #guarded(start: () => Promise<RunResult>, signal: AbortSignal): Promise<TaskRunResult> {
    if (this.#backendWasDown) {
      // The catalog keeps a failed probe for 30 s; the daemon's backoff (capped at --interval) must
      // ask the backends again.
      this.#ports.refreshCatalog();
    }
    const outcome = await this.#outcome(start, signal);
    this.#backendWasDown = outcome.kind === 'backend_down';
    return outcome;
  }

  async #outcome(start: () => Promise<RunResult>, signal: AbortSignal): Promise<TaskRunResult> {
    try {
      const result = await start();
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

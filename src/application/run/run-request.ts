/**
 * What starting a run takes, from any interface or orchestrator, and the narrow port by which
 * the daemon, the battery, the queue worker, the HTTP hub and the MCP server start one.
 */
import type { RunResult } from '../../domain/run-result.ts';
import type { ModelChoice } from '../models/resolve-model.ts';
import type { RunObserver } from '../ports.ts';
import type { ResumeFrom } from './execute-task-input.ts';
import type { OnApproval } from '../../domain/approvals.ts';
import type { ApprovalPrompt } from './call-approvals.ts';

/** What a run request carries, from any interface. */
export interface RunRequest {
  readonly specialist: string;
  readonly task: string;
  readonly workspace?: string | undefined;
  readonly model?: string | undefined;
  /** Where `model` came from, named in the choice's reason and errors (default `--model`), e.g. `LM_STUDIO_MODEL`. */
  readonly modelFrom?: string | undefined;
  readonly maxSteps?: number | undefined;
  readonly observers?: readonly RunObserver[];
  readonly signal: AbortSignal;
  /** The run id to use, for callers that must know it before the run starts (the HTTP API). */
  readonly runId?: string | undefined;
  /** Told which model was chosen and why, before the run starts. */
  readonly onModelChosen?: (choice: ModelChoice) => void;
  /** Told about trouble that does not stop the run (the control database is off), once per run. */
  readonly onNotice?: (message: string) => void;
  /**
   * When another run holds the workspace: wait for it (the default), or fail at once with
   * `workspace_busy` (SPEC §10). `onNotice` hears who holds it while the run waits.
   */
  readonly waitForWorkspace?: boolean;
  /** Labels recorded in the run's `run_start` (e.g. `{ battery: 'bat-…', cell: '…' }`). */
  readonly tags?: Readonly<Record<string, string>>;
  /**
   * Who alone may go on with the run once parked or left (recorded in `run_start`): the OpenSpec
   * daemon says `daemon`, for it sets a parked run's edits aside; a resume by anyone else is
   * refused (`resumer`) unless forced. Absent: any process.
   */
  readonly resumer?: string;
  /**
   * Asked before each runlog line: an error means this process lost the run (a queue worker whose
   * lease another took, or expired unrenewed): nothing more is written, no model request is sent,
   * and the run rejects with that error (SPEC §18: one process appends to a run at a time).
   */
  readonly fence?: () => Error | undefined;
  /** Goes on with the run `runId` from its runlog instead of starting it (SPEC §18; `RunResumer`). */
  readonly resume?: ResumeFrom;
  /**
   * What a call that needs a person's approval does (SPEC §19), given by the caller (`--on-approval`):
   * over the config's `policy.on_approval`, which is over `defaultOnApproval`.
   */
  readonly onApproval?: OnApproval | undefined;
  /** The channel's own default: a terminal waits, no terminal denies, HTTP, MCP, the daemon and workers park. */
  readonly defaultOnApproval?: OnApproval | undefined;
  /** The terminal's prompt, for `wait`. */
  readonly approvalPrompt?: ApprovalPrompt | undefined;
  /** Nothing may wait here (MCP without elicitation): a `wait` the config asks for parks instead. */
  readonly noWaiting?: boolean | undefined;
}

/** Runs a task end to end; errors before the run starts (bad specialist, workspace, model) are thrown. */
export type RunTask = (request: RunRequest) => Promise<RunResult>;

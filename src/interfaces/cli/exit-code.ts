import { type FabricErrorCode, isFabricErrorCode } from '../../domain/errors.ts';
import type { RunStatus } from '../../domain/run-result.ts';
import { EXIT } from './io.ts';

/** The one place error codes become exit codes. */
export function exitCodeFor(code: FabricErrorCode): number {
  switch (code) {
    case 'usage':
    case 'config_invalid':
    case 'config_not_found':
    case 'specialist_unknown':
    case 'pack_load_failed':
    // A run reference that names nothing, or a runlog that is not a whole run: bad input.
    case 'run_not_found':
    case 'runlog_corrupt':
    // Nothing to resume, or not now (SPEC §18): the message names the reason and the fix.
    case 'run_not_resumable':
    case 'run_not_live':
    case 'run_finished':
    case 'steer_stale_step':
    // An approval that names nothing, or has its answer already (SPEC §19).
    case 'approval_not_found':
    case 'approval_answered':
    // A file of the approval store that is cut or edited: named, with what to do.
    case 'approval_unreadable':
    // A battery's workspace over the queue's archive limit: nothing ran.
    case 'workspace_too_large':
      return EXIT.usage;
    case 'model_not_found':
    case 'model_lacks_tools':
    // The model's window cannot hold the run's system prompt, tools, task and one result.
    case 'context_too_small':
    case 'queue_unavailable':
    case 'backend_unavailable':
      return EXIT.noModel;
    case 'run_cancelled':
      return EXIT.cancelled;
    case 'backend_error':
    case 'context_overflow':
    case 'run_stuck':
    case 'model_output_unparseable':
    case 'tool_failed':
    case 'sandbox_violation':
    // `on_approval: fail`: a call needed a person's approval, and the run ended there.
    case 'approval_required':
    // Asked not to wait for another run's workspace: this run did not start.
    case 'workspace_busy':
    // The runlog could not be written (a full disk): the run stopped where its record did.
    case 'runlog_unwritable':
    // `fabric otel export`: the OTLP receiver did not take the spans.
    case 'telemetry_export_failed':
    case 'internal':
      return EXIT.runFailed;
  }
}

/**
 * The exit code of a run that ended `failed`: its error's code decides, as for an error thrown
 * before the run, so a model without tools exits 4 either way; a code this version
 * does not know (a newer runlog's) is a failed run.
 */
export function exitCodeForFailedRun(error: { readonly code: string } | null): number {
  return error !== null && isFabricErrorCode(error.code) ? exitCodeFor(error.code) : EXIT.runFailed;
}

/** The exit code of a run that ended (`fabric run`, `fabric resume`): its status, and a failure's code. */
export function exitCodeForRun(result: {
  readonly status: RunStatus;
  readonly error: { readonly code: string } | null;
}): number {
  switch (result.status) {
    case 'succeeded':
      return EXIT.ok;
    case 'max_steps':
      return EXIT.maxSteps;
    case 'cancelled':
    case 'interrupted':
      return EXIT.cancelled;
    case 'awaiting_approval':
      return EXIT.awaitingApproval;
    case 'failed':
      return exitCodeForFailedRun(result.error);
  }
}

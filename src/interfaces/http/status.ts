import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ApiErrorCode } from './api-error.ts';

/** The one place error codes become HTTP statuses (the CLI's equivalent is `exit-code.ts`). */
export function httpStatusFor(code: ApiErrorCode): ContentfulStatusCode {
  switch (code) {
    case 'invalid_request':
    case 'usage':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
    case 'sandbox_violation':
      return 403;
    case 'not_found':
    case 'specialist_unknown':
    case 'run_not_found':
    case 'approval_not_found':
      return 404;
    case 'run_not_active':
    case 'run_cancelled':
    case 'workspace_busy':
    case 'run_not_resumable':
    case 'run_not_live':
    case 'run_finished':
    case 'steer_stale_step':
    case 'approval_answered':
      return 409;
    case 'payload_too_large':
    case 'workspace_too_large':
      return 413;
    case 'runlog_corrupt':
    case 'approval_unreadable':
    case 'run_stuck':
    case 'model_output_unparseable':
    case 'approval_required':
    case 'context_too_small':
      return 422;
    case 'backend_error':
    case 'context_overflow':
    case 'telemetry_export_failed':
      return 502;
    case 'queue_unavailable':
    case 'backend_unavailable':
    case 'model_not_found':
    case 'model_lacks_tools':
      return 503;
    // The runs directory is full (or not writable): the server's storage, not the request.
    case 'runlog_unwritable':
      return 507;
    // The server's own config or a pack it cannot build: nothing the client can change.
    case 'config_invalid':
    case 'config_not_found':
    case 'pack_load_failed':
    case 'tool_failed':
    case 'internal':
      return 500;
  }
}

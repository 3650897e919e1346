/**
 * Which cell failures are the infrastructure's, not the model's (SPEC §12.1): a server down, a
 * model missing or failing to load, a stream cut after the client's retries, a window the server
 * could not give, a worker that died. They are retried (bounded), shown as such, and never
 * counted against the model; `--resume` runs them again.
 */

/** The run error codes of a run that ended for its infrastructure, not for its model. */
const INFRASTRUCTURE_CODES: ReadonlySet<string> = new Set([
  'backend_unavailable',
  'backend_error',
  'model_not_found',
  'context_too_small',
  'workspace_busy',
  'queue_unavailable',
  'internal',
]);

/** Whether a run that ended `failed` with `code` failed for its infrastructure. */
export function isInfrastructureCode(code: string | null | undefined): boolean {
  return code !== null && code !== undefined && INFRASTRUCTURE_CODES.has(code);
}

/** How many times a cell is tried in one session when its infrastructure fails it (the first try included). */
export const INFRASTRUCTURE_ATTEMPTS = 3;

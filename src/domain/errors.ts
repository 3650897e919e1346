/** Stable error codes. They map to HTTP statuses and CLI exit codes in one place each. */
export type FabricErrorCode =
  | 'config_invalid'
  | 'config_not_found'
  | 'specialist_unknown'
  | 'pack_load_failed'
  | 'usage'
  | 'backend_unavailable'
  | 'backend_error'
  | 'model_not_found'
  | 'model_lacks_tools'
  | 'context_overflow'
  | 'run_cancelled'
  | 'run_not_found'
  | 'runlog_corrupt'
  | 'tool_failed'
  | 'sandbox_violation'
  | 'workspace_busy'
  | 'internal';

/** The one error class of the fabric: a stable `code`, a message that says what to do, and the cause. */
export class FabricError extends Error {
  readonly code: FabricErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: FabricErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FabricError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

/**
 * A failure a tool reports to the model. It never crashes a run: the loop turns it into the
 * tool result. `securityEvent` is set when the refusal is a sandbox decision to be logged.
 */
export class ToolError extends Error {
  readonly securityEvent: SecurityEventDetails | undefined;

  constructor(message: string, options: { cause?: unknown; securityEvent?: SecurityEventDetails } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ToolError';
    this.securityEvent = options.securityEvent;
  }
}

/** What a sandbox refusal records in the runlog's `security_event` line. Never secret values. */
export interface SecurityEventDetails {
  readonly eventType: string;
  readonly rule: string;
  readonly requested?: unknown;
  readonly resolved?: unknown;
}

/** The message of any thrown value. */
export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

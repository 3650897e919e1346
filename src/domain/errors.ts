/** Every stable error code (docs/errors.md documents each); the type is derived from it. */
export const FABRIC_ERROR_CODES = [
  'config_invalid',
  'config_not_found',
  'specialist_unknown',
  'pack_load_failed',
  'usage',
  'backend_unavailable',
  'backend_error',
  'model_not_found',
  'model_lacks_tools',
  'context_overflow',
  'context_too_small',
  'run_stuck',
  'model_output_unparseable',
  'run_cancelled',
  'run_not_found',
  'run_not_resumable',
  'run_not_live',
  'run_finished',
  'steer_stale_step',
  'approval_not_found',
  'approval_answered',
  'approval_required',
  'approval_unreadable',
  'runlog_corrupt',
  'runlog_unwritable',
  'tool_failed',
  'sandbox_violation',
  'workspace_busy',
  'queue_unavailable',
  'workspace_too_large',
  'telemetry_export_failed',
  'internal',
] as const;

/** Stable error codes. They map to HTTP statuses and CLI exit codes in one place each. */
export type FabricErrorCode = (typeof FABRIC_ERROR_CODES)[number];

/** True for a string that is one of the fabric's error codes (a runlog's `error.code`, say). */
export function isFabricErrorCode(code: string): code is FabricErrorCode {
  return (FABRIC_ERROR_CODES as readonly string[]).includes(code);
}

// One identity across copies of the package (SPEC §14): a pack that imported another copy of
// agent-fabric (its own node_modules, a bundle, the sources beside the build) throws errors the
// runtime still recognises. `instanceof` checks a brand registered with Symbol.for, which every
// copy shares, instead of the prototype chain, which each copy has its own of.
const FABRIC_ERROR: unique symbol = Symbol.for('agent-fabric.FabricError');
const TOOL_ERROR: unique symbol = Symbol.for('agent-fabric.ToolError');

function branded(value: unknown, brand: symbol): boolean {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[brand] === true;
}

/** The one error class of the fabric: a stable `code`, a message that says what to do, and the cause. */
export class FabricError extends Error {
  /** True for a FabricError of any copy of the package; a subclass checks its prototype as usual. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` was asked about.
    if (this !== FabricError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return branded(value, FABRIC_ERROR);
  }

  readonly [FABRIC_ERROR] = true;
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
  /** True for a ToolError of any copy of the package; a subclass checks its prototype as usual. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `this` is the class `instanceof` was asked about.
    if (this !== ToolError) return Function.prototype[Symbol.hasInstance].call(this, value);
    return branded(value, TOOL_ERROR);
  }

  readonly [TOOL_ERROR] = true;
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

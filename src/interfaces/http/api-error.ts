import { FabricError, type FabricErrorCode, errorMessage } from '../../domain/errors.ts';

/** Codes only the HTTP API answers with (docs/errors.md lists them); every other error carries a `FabricErrorCode`. */
export const HTTP_ONLY_ERROR_CODES = [
  'invalid_request',
  'not_found',
  'unauthorized',
  'forbidden',
  'payload_too_large',
  'run_not_active',
] as const;

/** A code only the HTTP API answers with. */
export type HttpOnlyErrorCode = (typeof HTTP_ONLY_ERROR_CODES)[number];

/** Every `error.code` an API response can carry. */
export type ApiErrorCode = FabricErrorCode | HttpOnlyErrorCode;

/**
 * One problem of a request (a body key, a query parameter, a header): where, what it takes, what
 * it got, and the whole as one line. A problem that is no mismatch of form (a battery's task id
 * used twice) has only `path` and `message`.
 */
export interface ApiIssue {
  readonly path: string;
  readonly expected?: string;
  readonly found?: string;
  readonly message: string;
}

/** A wire-level failure of a request (bad body, unknown route, no token); use-case errors stay `FabricError`. */
export class ApiError extends Error {
  readonly code: HttpOnlyErrorCode;
  /** For `invalid_request`: what was wrong, key by key. */
  readonly issues: readonly ApiIssue[] | undefined;

  constructor(
    code: HttpOnlyErrorCode,
    message: string,
    options: { issues?: readonly ApiIssue[]; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ApiError';
    this.code = code;
    this.issues = options.issues;
  }
}

/** The JSON body of an error response. */
export interface ErrorBody {
  readonly error: {
    readonly code: ApiErrorCode;
    readonly message: string;
    readonly issues?: readonly ApiIssue[];
  };
}

/** Any thrown value as an error body; what is neither ours nor the fabric's is `internal`. */
export function errorBodyOf(error: unknown): ErrorBody {
  if (error instanceof ApiError) {
    const issues = error.issues === undefined ? {} : { issues: error.issues };
    return { error: { code: error.code, message: error.message, ...issues } };
  }
  if (error instanceof FabricError) return { error: { code: error.code, message: error.message } };
  return { error: { code: 'internal', message: `Unexpected error: ${errorMessage(error)}` } };
}

import { FabricError, type FabricErrorCode, errorMessage } from '../../domain/errors.ts';

/** Codes only the HTTP API answers with; every other error carries a `FabricErrorCode`. */
export type HttpOnlyErrorCode =
  | 'invalid_request'
  | 'not_found'
  | 'unauthorized'
  | 'forbidden'
  | 'payload_too_large'
  | 'run_not_active';

/** Every `error.code` an API response can carry. */
export type ApiErrorCode = FabricErrorCode | HttpOnlyErrorCode;

/** A wire-level failure of a request (bad body, unknown route, no token); use-case errors stay `FabricError`. */
export class ApiError extends Error {
  readonly code: HttpOnlyErrorCode;
  /** For `invalid_request`: what was wrong, key by key. */
  readonly issues: readonly { readonly path: string; readonly message: string }[] | undefined;

  constructor(
    code: HttpOnlyErrorCode,
    message: string,
    options: { issues?: readonly { path: string; message: string }[]; cause?: unknown } = {},
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
    readonly issues?: readonly { readonly path: string; readonly message: string }[];
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

/**
 * Request bodies and parameters of the HTTP API, validated at the route (STYLE §6): a bad body
 * is a 400 `invalid_request` that says which key is wrong, before any use case runs.
 */
import { isAbsolute } from 'node:path';
import * as v from 'valibot';
import { ApiError } from './api-error.ts';

const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'));

// A relative path would resolve against the server's working directory, which the client cannot see.
const absolutePath = v.pipe(v.string(), v.check(isAbsolute, 'must be an absolute path on the server'));

/** `POST /v1/runs`. */
export const StartRunBody = v.strictObject({
  specialist: nonEmpty,
  task: nonEmpty,
  workspace: v.optional(absolutePath),
  model: v.optional(nonEmpty),
  max_steps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
});

/** `POST /v1/runs/:id/replay`. */
export const ReplayBody = v.strictObject({
  execute: v.optional(v.boolean(), false),
  workspace: v.optional(absolutePath),
});

/** A run id as the fabric makes them (or a unique prefix): never a path. */
const RunIdParam = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), v.maxLength(200));

/** Checks `:id`; anything that is not a run id is a run that does not exist. */
export function runIdParam(value: string): string {
  // The runlog store also reads paths and `*.jsonl` files; neither may come in through a URL.
  if (!v.is(RunIdParam, value) || value.endsWith('.jsonl'))
    throw new ApiError('not_found', `No run "${value}".`);
  return value;
}

/** Validates a parsed body against a schema, or throws `invalid_request` with the issues. */
export function validateBody<T extends v.GenericSchema>(schema: T, body: unknown): v.InferOutput<T> {
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  const issues = result.issues.map((issue) => ({
    path: v.getDotPath(issue) ?? '',
    message: issue.received === 'undefined' ? 'is required' : issue.message,
  }));
  const summary = issues.map((issue) => `${issue.path || 'body'}: ${issue.message}`).join('; ');
  throw new ApiError('invalid_request', `Invalid request body: ${summary}.`, { issues });
}

/** Reads a JSON body; an empty one is `{}` (for routes whose keys are all optional). */
export async function readJson(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text.trim() === '') return {};
  const type = request.headers.get('content-type') ?? '';
  // Demanding JSON also keeps browsers from sending a body cross-site without a CORS preflight.
  if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(type))
    throw new ApiError('invalid_request', 'Send the body as JSON, with Content-Type: application/json.');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ApiError('invalid_request', `The body is not valid JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** A positive whole-number query parameter, or its default. */
export function limitParam(value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new ApiError('invalid_request', `limit takes a whole number from 1 to ${max}, not "${value}".`, {
      issues: [{ path: 'limit', message: `must be a whole number from 1 to ${max}` }],
    });
  return n;
}

/** The `Last-Event-ID` header: the seq of the last event the client has; 0 when absent. */
export function lastEventIdHeader(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new ApiError(
      'invalid_request',
      `Last-Event-ID must be an event seq (a whole number), not "${value}".`,
    );
  return n;
}

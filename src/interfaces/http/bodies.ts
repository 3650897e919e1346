/**
 * Request bodies and parameters of the HTTP API, validated at the route (STYLE §6): a bad body
 * is a 400 `invalid_request` that says which key is wrong, before any use case runs.
 */
import { isAbsolute } from 'node:path';
import * as v from 'valibot';
import { describeValue, issueFacts } from '../../config/issues.ts';
import { MAX_STEER_TEXT } from '../../application/run/steer-run.ts';
import { FabricError } from '../../domain/errors.ts';
import { didYouMean } from '../../domain/words.ts';
import { ApiError, type ApiIssue } from './api-error.ts';

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
/** `POST /v1/runs/:id/resume` (SPEC §18): N more steps, and whether to go on over a changed config. */
export const ResumeRunBody = v.strictObject({
  max_steps: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
  force: v.optional(v.boolean()),
});

/** `POST /v1/runs/:id/messages` (SPEC §19): a person's message to a running run. */
export const SteerBody = v.strictObject({
  // Checked before it is trimmed, so the refusal shows what was sent (`"   "`), not `""`.
  text: v.pipe(
    v.string(),
    v.check((text) => text.trim() !== '', 'must be text, not empty or only whitespace'),
    v.trim(),
    v.maxLength(MAX_STEER_TEXT),
  ),
  mode: v.optional(v.picklist(['steer', 'interrupt']), 'steer'),
  expected_step: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
});

/** `POST /v1/runs/:id/pause`: nothing to say but the pause; a key sent is a mistake. */
export const PauseBody = v.strictObject({});

export const ReplayBody = v.strictObject({
  execute: v.optional(v.boolean(), false),
  workspace: v.optional(absolutePath),
});

/** A run id as the fabric makes them (or a unique prefix): never a path. */
const RunIdParam = v.pipe(v.string(), v.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/), v.maxLength(200));

/** Checks `:id`; anything that is not a run id is a run that does not exist (`run_not_found`). */
export function runIdParam(value: string): string {
  // The runlog store also reads paths and `*.jsonl` files; neither may come in through a URL.
  if (!v.is(RunIdParam, value) || value.endsWith('.jsonl'))
    throw new FabricError('run_not_found', `No run "${value}". GET /v1/runs lists the runs.`);
  return value;
}

/**
 * Validates a parsed body against a schema, or throws `invalid_request` listing every problem at
 * once, each as `<field>: expected <what>, found <what>` (and the key meant, for a typo).
 */
export function validateBody<T extends v.GenericSchema>(schema: T, body: unknown): v.InferOutput<T> {
  const known = 'entries' in schema ? Object.keys(schema.entries as object) : [];
  // valibot's object schemas take an array for an object (its indexes as unknown keys).
  if ('entries' in schema && (typeof body !== 'object' || body === null || Array.isArray(body)))
    throw invalidRequest([mismatch('body', 'a JSON object', describeValue(body))]);
  const result = v.safeParse(schema, body);
  if (result.success) return result.output;
  throw invalidRequest(
    result.issues.map((issue) => {
      const facts = issueFacts(issue, known);
      const hint = facts.unknownKey && !facts.path.includes('.') ? didYouMean(facts.path, known) : '';
      return mismatch(facts.path || 'body', facts.expected, facts.found, hint);
    }),
  );
}

/** One issue whose value has the wrong form: `<path>: expected <what>, found <what>[ Did you mean …?]`. */
export function mismatch(path: string, expected: string, found: string, hint = ''): ApiIssue {
  return { path, expected, found, message: `${path}: expected ${expected}, found ${found}.${hint}` };
}

/** The 400 for a request with these problems; its message is every issue's, in order. */
export function invalidRequest(issues: readonly ApiIssue[], cause?: unknown): ApiError {
  return new ApiError('invalid_request', issues.map((issue) => issue.message).join(' '), {
    issues,
    ...(cause === undefined ? {} : { cause }),
  });
}

/** Reads a JSON body; an empty one is `{}` (for routes whose keys are all optional). */
export async function readJson(request: Request): Promise<unknown> {
  const text = await request.text();
  if (text.trim() === '') return {};
  const type = request.headers.get('content-type') ?? '';
  // Demanding JSON also keeps browsers from sending a body cross-site without a CORS preflight.
  if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(type))
    throw invalidRequest([
      mismatch(
        'body',
        'JSON sent with Content-Type: application/json',
        type === '' ? 'no Content-Type' : `Content-Type ${type}`,
      ),
    ]);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidRequest(
      [mismatch('body', 'valid JSON', `text that is not (${(error as Error).message})`)],
      error,
    );
  }
}

/** A positive whole-number query parameter, or its default. */
export function limitParam(value: string | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw invalidRequest([mismatch('limit', `a whole number from 1 to ${max}`, JSON.stringify(value))]);
  return n;
}

/** The `Last-Event-ID` header: the seq of the last event the client has; 0 when absent. */
export function lastEventIdHeader(value: string | undefined): number {
  if (value === undefined || value.trim() === '') return 0;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw invalidRequest([
      mismatch('Last-Event-ID', 'an event seq (a whole number from 0)', JSON.stringify(value)),
    ]);
  return n;
}

/**
 * What the files of the approval store must hold to be read (file-approval-store.ts): a file
 * another tool cut, emptied or edited is told apart from a missing one, and never read as an
 * approval with fields missing (sorting, answering and resuming all rely on them).
 */
import { readFile } from 'node:fs/promises';
import * as v from 'valibot';

const text = v.string();
const STATES = ['pending', 'approved', 'denied', 'expired', 'cancelled'] as const;
const SCOPES = ['once', 'run', 'specialist'] as const;

const PATTERN = v.looseObject({
  tool: text,
  command: v.optional(v.array(text)),
  path: v.optional(text),
  exact: v.boolean(),
  label: text,
  matches: text,
  does_not_match: text,
});

export const REQUEST_SHAPE = v.looseObject({
  id: text,
  run_id: text,
  specialist: text,
  step: v.number(),
  call_id: text,
  tool: text,
  argv: v.optional(v.array(text)),
  path: v.optional(text),
  arguments: text,
  rule: text,
  requested_at: text,
  expires_at: v.optional(text),
  proposals: v.array(PATTERN),
  state: v.picklist(STATES),
});

export const ANSWER_SHAPE = v.looseObject({
  state: v.picklist(['approved', 'denied', 'expired', 'cancelled']),
  scope: v.picklist(SCOPES),
  pattern: v.number(),
  message: v.optional(text),
  channel: text,
  by: v.optional(text),
  at: text,
  grant_expires_at: v.optional(text),
});

export const GRANT_SHAPE = v.looseObject({
  id: text,
  scope: v.picklist(['run', 'specialist']),
  specialist: text,
  run_id: v.optional(text),
  pattern: PATTERN,
  approval_id: text,
  created_at: text,
  expires_at: v.optional(text),
});

export interface Damaged {
  readonly kind: 'damaged';
  readonly path: string;
  readonly why: string;
}
export type Read = { readonly kind: 'missing' } | { readonly kind: 'ok'; readonly value: unknown } | Damaged;

/**
 * A file of the store: `missing` when it is not there, `damaged` (and why) when it is not the
 * JSON of its shape, or names another id than its file.
 */
export async function readWhole(path: string, shape: v.GenericSchema, id?: string): Promise<Read> {
  let body: string;
  try {
    body = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'missing' };
    return { kind: 'damaged', path, why: `cannot be read: ${(error as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return { kind: 'damaged', path, why: body.trim() === '' ? 'empty' : 'not whole JSON (cut short?)' };
  }
  const result = v.safeParse(shape, json);
  if (!result.success) {
    const issue = result.issues[0];
    const key = issue?.path?.map((item) => String(item.key)).join('.') ?? '';
    const what =
      issue === undefined || issue.input === undefined
        ? 'missing'
        : `expected ${issue.expected ?? 'another value'}, found ${issue.received}`;
    return { kind: 'damaged', path, why: key === '' ? 'not a JSON object' : `${key}: ${what}` };
  }
  if (id !== undefined && (json as { id?: unknown }).id !== id)
    return {
      kind: 'damaged',
      path,
      why: `it names id ${JSON.stringify((json as { id?: unknown }).id)}, not ${id}`,
    };
  return { kind: 'ok', value: result.output };
}

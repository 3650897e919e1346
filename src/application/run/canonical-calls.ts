/**
 * Tool calls made canonical before they are stored (research/local-model-quirks-2.md rule 2): the
 * arguments become one JSON object, re-serialised, so no history the fabric sends back can be
 * refused for a past call (Q7, Q9) or shown to the model in a form it then imitates (Q6). Pure.
 */
import { errorMessage } from '../../domain/errors.ts';
import type { JsonSchema, ToolCall } from '../../domain/messages.ts';
import { type Overescaped, overescapedField } from './overescaped.ts';

/** A call as it is stored and sent back, with what was done to its arguments on the way. */
export interface CanonicalCall {
  /** The call with `arguments` a canonical JSON object text (`{}` when none could be read). */
  readonly call: ToolCall;
  /** The arguments as they arrived, when they differ from the canonical text. */
  readonly raw?: string;
  /** What was repaired, for the runlog (a JSON string decoded twice, a number read from text…). */
  readonly repairs: readonly string[];
  /** Why the call cannot run: its arguments are not a JSON object. The model is told this. */
  readonly problem?: string;
  /**
   * Why the call is not run though its arguments are an object: a file-content field arrived
   * with literal `\n` instead of line breaks (Q4). Stored as it came; the model is asked again.
   */
  readonly overescaped?: Overescaped;
}

/** The canonical form of a call, its arguments read against the tool's parameter schema. */
export function canonicalCall(call: ToolCall, schema: JsonSchema | undefined): CanonicalCall {
  const repairs: string[] = [];
  const text = call.arguments.trim();
  let value: unknown;
  // No arguments at all (Q5): `""`, `null` — the tool's schema decides whether `{}` is enough.
  if (text === '' || text === 'null') {
    value = {};
  } else {
    try {
      value = JSON.parse(text);
    } catch (error) {
      const excerpt = text.length > 200 ? `${text.slice(0, 200)}…` : text;
      return dropped(call, `The arguments are not valid JSON (${errorMessage(error)}): ${excerpt}`);
    }
  }
  // A JSON string inside the JSON string (Q1): decoded once more, never twice.
  if (typeof value === 'string' && /^\s*[{[]/.test(value)) {
    try {
      value = JSON.parse(value);
      repairs.push('arguments were a JSON string holding the object: decoded once more');
    } catch {
      // stays a string: refused below
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return dropped(call, 'The arguments must be a JSON object, e.g. {"path": "a.txt"}.');
  const typedValue = schema === undefined ? value : typed(value as Record<string, unknown>, schema, repairs);
  const canonical = JSON.stringify(typedValue);
  const overescaped = overescapedField(typedValue as Record<string, unknown>, schema);
  return {
    call: { ...call, arguments: canonical },
    ...(canonical === call.arguments ? {} : { raw: call.arguments }),
    repairs,
    ...(overescaped === undefined ? {} : { overescaped }),
  };
}

function dropped(call: ToolCall, problem: string): CanonicalCall {
  return { call: { ...call, arguments: '{}' }, raw: call.arguments, repairs: [], problem };
}

type PropertySchema = { readonly type?: unknown };

/**
 * Scalars typed the way the schema says, only where the reading is unambiguous (Q3): `"130"` for
 * a number, `"True"` for a boolean, a JSON text for an array or object (Q2). Never evaluated;
 * anything else is left for the tool's validation to name.
 */
function typed(
  args: Record<string, unknown>,
  schema: JsonSchema,
  repairs: string[],
): Record<string, unknown> {
  const properties = (schema as { properties?: Record<string, PropertySchema> }).properties ?? {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    const types = typesOf(properties[key]);
    const read = typeof value === 'string' && !types.has('string') ? readScalar(value, types) : undefined;
    if (read === undefined) {
      out[key] = value;
      continue;
    }
    out[key] = read;
    repairs.push(`"${key}" was the text ${JSON.stringify(value)}: read as ${JSON.stringify(read)}`);
  }
  return out;
}

function typesOf(property: PropertySchema | undefined): ReadonlySet<string> {
  const type = property?.type;
  if (typeof type === 'string') return new Set([type]);
  if (Array.isArray(type)) return new Set(type.filter((t): t is string => typeof t === 'string'));
  return new Set();
}

function readScalar(text: string, types: ReadonlySet<string>): unknown {
  const trimmed = text.trim();
  if ((types.has('number') || types.has('integer')) && /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(trimmed)) {
    const number = Number(trimmed);
    if (types.has('number') || Number.isInteger(number)) return number;
  }
  if (types.has('boolean')) {
    if (/^true$/i.test(trimmed)) return true;
    if (/^false$/i.test(trimmed)) return false;
  }
  if ((types.has('array') && trimmed.startsWith('[')) || (types.has('object') && trimmed.startsWith('{'))) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed) ? types.has('array') : parsed !== null && typeof parsed === 'object')
        return parsed;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

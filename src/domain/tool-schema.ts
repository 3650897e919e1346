/**
 * Tool schemas as local servers can use them (research/local-model-quirks-2.md rule 8, Q2, Q22):
 * every local `$ref` (`#/$defs/…`, draft-07 `#/definitions/…`) inlined — vLLM's XML parsers
 * read an unresolved `$ref` property as a string, Gemma's template throws on it — and no
 * `pattern` or `format`, which llama-server's grammar chokes on (it then fails open or answers
 * 500). The fabric still validates every call against the full schema itself. Pure.
 */
import type { JsonSchema } from './messages.ts';

type Schema = Record<string, unknown>;

/** Keywords not sent: definitions (inlined instead), and the string constraints grammars choke on. */
const DROPPED = new Set(['$defs', 'definitions', '$schema', '$id', 'pattern', 'format']);
/**
 * Annotations the fabric reads itself (a file-content field, Q4) and a server has no use for: kept
 * for reading calls, left off the wire so no grammar builder meets a keyword it does not know.
 */
const ANNOTATIONS = new Set(['contentMediaType', 'contentEncoding']);
/** Keywords whose value is one schema. */
const ONE = ['items', 'additionalProperties', 'not', 'contains', 'propertyNames'];
/** Keywords whose value is a list of schemas. */
const MANY = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
/** Deeper than this a schema is cut to `{"type": "object"}` (a bound for self-references). */
const MAX_DEPTH = 16;

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * The schema with local references inlined and `pattern`/`format` taken out; for the wire
 * (`wire: true`) the fabric's own annotations go too.
 */
export function simpleToolSchema(schema: JsonSchema, options: { readonly wire?: boolean } = {}): JsonSchema {
  const defs = { ...asSchema(schema.definitions), ...asSchema(schema.$defs) };
  const dropped = options.wire === true ? new Set([...DROPPED, ...ANNOTATIONS]) : DROPPED;
  return walk(schema, defs, [], 0, dropped);
}

function asSchema(value: unknown): Schema {
  return isSchema(value) ? value : {};
}

function walk(
  schema: Schema,
  defs: Schema,
  seen: readonly string[],
  depth: number,
  dropped: ReadonlySet<string>,
): Schema {
  if (depth > MAX_DEPTH) return { type: 'object' };
  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const { $ref: _, ...siblings } = schema;
    const name = /^#\/(?:\$defs|definitions)\/(.+)$/.exec(ref)?.[1];
    const target = name === undefined ? undefined : defs[name];
    // A cycle, or a reference that is not local: an object, which every parser reads as such.
    if (name === undefined || !isSchema(target) || seen.includes(name))
      return walk({ type: 'object', ...siblings }, defs, seen, depth + 1, dropped);
    return walk({ ...target, ...siblings }, defs, [...seen, name], depth + 1, dropped);
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (dropped.has(key)) continue;
    if (key === 'properties' && isSchema(value)) {
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [
          name,
          isSchema(sub) ? walk(sub, defs, seen, depth + 1, dropped) : sub,
        ]),
      );
    } else if (ONE.includes(key) && isSchema(value)) {
      out[key] = walk(value, defs, seen, depth + 1, dropped);
    } else if (MANY.includes(key) && Array.isArray(value)) {
      out[key] = value.map((sub) => (isSchema(sub) ? walk(sub, defs, seen, depth + 1, dropped) : sub));
    } else {
      out[key] = value;
    }
  }
  return out;
}

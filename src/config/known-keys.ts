import type * as v from 'valibot';

type AnySchema = v.GenericSchema & {
  readonly entries?: Record<string, AnySchema>;
  readonly wrapped?: AnySchema;
  readonly value?: AnySchema;
  readonly options?: readonly AnySchema[];
  readonly item?: AnySchema;
};

/**
 * The keys the mapping at `path` may hold under `schema`, following objects, records, arrays,
 * optionals and unions; empty when the path leads nowhere known. Lets a config error suggest the key that
 * was meant (`specialists.rust.max_step` → "max_steps") without a second list of names.
 */
export function knownKeysAt(schema: v.GenericSchema, path: readonly PropertyKey[]): string[] {
  return [...new Set(mappingsAt(schema as AnySchema, path).flatMap((s) => Object.keys(s.entries ?? {})))];
}

function mappingsAt(schema: AnySchema, path: readonly PropertyKey[]): AnySchema[] {
  if (schema.wrapped !== undefined) return mappingsAt(schema.wrapped, path);
  if (schema.options !== undefined) return schema.options.flatMap((option) => mappingsAt(option, path));
  const [key, ...rest] = path;
  if (key === undefined) return schema.entries === undefined ? [] : [schema];
  if (schema.entries !== undefined) {
    const entry = Object.hasOwn(schema.entries, key) ? schema.entries[String(key)] : undefined;
    return entry === undefined ? [] : mappingsAt(entry, rest);
  }
  if (schema.type === 'record' && schema.value !== undefined) return mappingsAt(schema.value, rest);
  if (schema.type === 'array' && schema.item !== undefined) return mappingsAt(schema.item, rest);
  return [];
}

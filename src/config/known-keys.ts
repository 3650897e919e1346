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

/**
 * What the key at `path` takes, in words (`a non-empty string`, `"allow", "ask" or "deny"`), for
 * a config error about a missing key; undefined when the schema does not say simply.
 */
export function expectedAt(schema: v.GenericSchema, path: readonly PropertyKey[]): string | undefined {
  const key = path.at(-1);
  if (key === undefined) return undefined;
  for (const parent of mappingsAt(schema as AnySchema, path.slice(0, -1))) {
    const entry = Object.hasOwn(parent.entries ?? {}, key) ? parent.entries?.[String(key)] : undefined;
    if (entry !== undefined) return describeSchema(entry);
  }
  return undefined;
}

function describeSchema(schema: AnySchema): string | undefined {
  if (schema.wrapped !== undefined) return describeSchema(schema.wrapped);
  const pipe = (schema as { pipe?: readonly { type: string; requirement?: unknown }[] }).pipe ?? [];
  switch (schema.type) {
    case 'string':
      return pipe.some((step) => step.type === 'min_length' && step.requirement === 1)
        ? 'a non-empty string'
        : 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return 'true or false';
    case 'picklist': {
      const names = (schema.options as unknown as readonly string[]).map((name) => JSON.stringify(name));
      return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names.at(-1)}`;
    }
    case 'array':
      return 'a list';
    case 'object':
    case 'strict_object':
    case 'record':
      return 'a mapping';
  }
  return undefined;
}

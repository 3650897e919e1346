import type { JsonSchema } from '../../domain/messages.ts';

/** Top-level keywords strict OpenAI-style validators refuse in function parameters. */
const DROPPED_AT_TOP = [
  '$schema',
  '$id',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'enum',
  'const',
  'if',
  'then',
  'else',
];

type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * An MCP tool's input schema as strict OpenAI-style validators (LM Studio, llama.cpp grammars)
 * accept it: `type: "object"` with `properties` at the top level, no top-level combinators.
 * A top-level `anyOf`/`oneOf` of object variants is flattened into one object whose
 * properties are the union and whose `required` keeps only what every variant requires; the
 * server still validates the call. Nested schemas pass through unchanged.
 */
export function toCompatibleToolSchema(input: unknown): JsonSchema {
  const schema: Schema = isSchema(input) ? { ...input } : {};
  const properties: Schema = isSchema(schema.properties) ? { ...schema.properties } : {};
  const required = new Set(stringList(schema.required));
  // allOf: every variant applies, so whatever any of them requires is required;
  // anyOf/oneOf: only what all of them require.
  const groups = [
    { variants: schemaList(schema.allOf), every: true },
    { variants: schemaList(schema.anyOf), every: false },
    { variants: schemaList(schema.oneOf), every: false },
  ];
  for (const { variants, every } of groups) {
    if (variants.length === 0) continue;
    for (const variant of variants) {
      if (!isSchema(variant.properties)) continue;
      for (const [key, value] of Object.entries(variant.properties)) properties[key] ??= value;
    }
    const lists = variants.map((variant) => stringList(variant.required));
    const names = every
      ? lists.flat()
      : (lists[0] ?? []).filter((name) => lists.every((list) => list.includes(name)));
    for (const name of names) required.add(name);
  }
  for (const key of DROPPED_AT_TOP) delete schema[key];
  const out: Schema = { ...schema, type: 'object', properties };
  const known = [...required].filter((name) => name in properties);
  if (known.length > 0) out.required = known;
  else delete out.required;
  return out;
}

function schemaList(value: unknown): Schema[] {
  return Array.isArray(value) ? value.filter(isSchema) : [];
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

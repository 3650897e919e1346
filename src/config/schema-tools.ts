/**
 * Valibot schemas as tools and servers use them: their JSON schema, and validation explained in
 * one line. Pure; importable by any layer (packs describe their tools with it, the MCP server its own).
 */
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import type { JsonSchema } from '../domain/messages.ts';

/** A validation's outcome: the parsed value, or one line saying every problem. */
export type SchemaValidation<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly message: string };

/** The JSON schema of a valibot schema, as strict OpenAI-style validators accept it. */
export function jsonSchemaOf(schema: v.GenericSchema): JsonSchema {
  const { $schema: _ignored, ...rest } = toJsonSchema(schema, { errorMode: 'ignore' }) as Record<
    string,
    unknown
  >;
  return rest;
}

/** Validates with valibot and explains every problem in one line the model can act on. */
export function validateWith<T extends v.GenericSchema>(
  schema: T,
  args: unknown,
): SchemaValidation<v.InferOutput<T>> {
  const result = v.safeParse(schema, args);
  if (result.success) return { ok: true, value: result.output };
  const problems = result.issues.map((issue) => {
    const path = v.getDotPath(issue);
    const where = path ? `"${path}"` : 'arguments';
    // valibot's `expected` for a missing key is the key itself: nothing to add.
    if (issue.received === 'undefined') return `${where} is required`;
    return `${where}: expected ${issue.expected ?? 'a valid value'}, got ${issue.received}${
      issue.kind === 'validation' ? ` (${issue.message})` : ''
    }`;
  });
  return { ok: false, message: problems.join('; ') };
}

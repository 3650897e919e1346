import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import type { FinishSpec, Tool, ToolContext, ToolOutput, Validation } from '../../application/ports.ts';
import type { JsonSchema } from '../../domain/messages.ts';

type ObjectSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/** Declares a tool whose arguments are a valibot object schema; the JSON schema is derived from it. */
export function defineTool<const TSchema extends ObjectSchema>(definition: {
  name: string;
  description: string;
  input: TSchema;
  run(args: v.InferOutput<TSchema>, context: ToolContext): Promise<string | ToolOutput>;
}): Tool {
  return {
    spec: {
      name: definition.name,
      description: definition.description,
      parameters: jsonSchemaOf(definition.input),
    },
    validate: (args) => validateWith(definition.input, args),
    run: (args, context) => definition.run(args as v.InferOutput<TSchema>, context),
  };
}

/** Declares a pack's `finish_task` output format from a valibot object schema. */
export function defineFinish<const TSchema extends ObjectSchema>(
  description: string,
  schema: TSchema,
): FinishSpec {
  return {
    description,
    parameters: jsonSchemaOf(schema),
    validate: (args) => validateWith(schema, args) as Validation<Record<string, unknown>>,
  };
}

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
): Validation<v.InferOutput<T>> {
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

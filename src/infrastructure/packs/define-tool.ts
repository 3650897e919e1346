import type * as v from 'valibot';
import type { FinishSpec, Tool, ToolContext, ToolOutput, Validation } from '../../application/ports.ts';
import { jsonSchemaOf, validateWith } from '../../config/schema-tools.ts';

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

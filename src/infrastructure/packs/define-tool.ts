import type * as v from 'valibot';
import type {
  AppliedCheck,
  FinishSpec,
  Tool,
  ToolContext,
  ToolOutput,
  Validation,
} from '../../application/ports.ts';
import type { EffectClass } from '../../domain/effects.ts';
import { jsonSchemaOf, validateWith } from '../../config/schema-tools.ts';

type ObjectSchema = v.ObjectSchema<v.ObjectEntries, v.ErrorMessage<v.ObjectIssue> | undefined>;

/**
 * Declares a tool whose arguments are a valibot object schema; the JSON schema is derived from it.
 * `effect` says what running it does (SPEC §18, docs/packs.md): undeclared, a resumed run treats
 * it as `external` and never runs a call of it twice. A `transform` may add `checkApplied`, so a
 * call that started before its process died is checked against the workspace instead.
 */
export function defineTool<const TSchema extends ObjectSchema>(definition: {
  name: string;
  description: string;
  input: TSchema;
  effect?: EffectClass | ((args: v.InferOutput<TSchema>) => EffectClass);
  checkApplied?: (args: v.InferOutput<TSchema>) => Promise<AppliedCheck>;
  run(args: v.InferOutput<TSchema>, context: ToolContext): Promise<string | ToolOutput>;
}): Tool {
  const { effect, checkApplied } = definition;
  return {
    spec: {
      name: definition.name,
      description: definition.description,
      parameters: jsonSchemaOf(definition.input),
    },
    ...(effect === undefined
      ? {}
      : {
          effect:
            typeof effect === 'function' ? (args: unknown) => effect(args as v.InferOutput<TSchema>) : effect,
        }),
    ...(checkApplied === undefined
      ? {}
      : { checkApplied: (args: unknown) => checkApplied(args as v.InferOutput<TSchema>) }),
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

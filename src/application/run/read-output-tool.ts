/**
 * `read_output`: pages through a tool output the run kept because it was larger than its share
 * of the window (SPEC §17). The loop offers it once anything was cut.
 */
import { ToolError } from '../../domain/errors.ts';
import type { ToolSpec } from '../../domain/messages.ts';
import type { Tool, Validation } from '../ports.ts';
import { type KeptOutputs, pageOf } from './output-budget.ts';

export const READ_OUTPUT_TOOL = 'read_output';

interface ReadOutputArgs {
  readonly call_id: string;
  readonly offset: number;
}

function validate(args: unknown): Validation<ReadOutputArgs> {
  const record = args !== null && typeof args === 'object' ? (args as Record<string, unknown>) : {};
  const problems: string[] = [];
  if (typeof record.call_id !== 'string' || record.call_id === '')
    problems.push('"call_id" is required (the id the cut result names)');
  const offset = record.offset ?? 0;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0)
    problems.push('"offset": expected a whole number of characters, 0 or more');
  return problems.length > 0
    ? { ok: false, message: problems.join('; ') }
    : { ok: true, value: { call_id: record.call_id as string, offset: offset as number } };
}

/** What the model is offered (its size counts in a run's window plan before it is offered). */
export const READ_OUTPUT_SPEC: ToolSpec = {
  name: READ_OUTPUT_TOOL,
  description:
    'Read on in a tool output that was cut to fit the context window: give the call_id the cut result names, and the offset to start at (characters).',
  parameters: {
    type: 'object',
    properties: {
      call_id: { type: 'string', description: 'The call whose output was cut.' },
      offset: { type: 'integer', minimum: 0, description: 'Where to start, in characters (default 0).' },
    },
    required: ['call_id'],
    additionalProperties: false,
  },
};

/** The paging tool of one run, pages `pageChars` long. */
export function readOutputTool(outputs: KeptOutputs, runId: string, pageChars: number): Tool {
  return {
    spec: READ_OUTPUT_SPEC,
    effect: 'read',
    validate,
    run: async (args) => {
      const { call_id: callId, offset } = args as ReadOutputArgs;
      const text = await outputs.read(runId, callId);
      if (text === null)
        throw new ToolError(
          `No output of call "${callId}" was kept: only a result cut to fit the window is kept whole. Give the call_id that a cut result names.`,
        );
      return pageOf(text, offset, pageChars);
    },
  };
}

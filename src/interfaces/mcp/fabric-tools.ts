import * as v from 'valibot';
import type { JsonSchema } from '../../domain/messages.ts';
import { jsonSchemaOf } from '../../config/schema-tools.ts';

/** The input of `run_task`. */
export const RunTaskInput = v.object({
  specialist: v.pipe(
    v.string(),
    v.minLength(1),
    v.description('the specialist to use (see list_specialists)'),
  ),
  task: v.pipe(v.string(), v.minLength(1), v.description('what the specialist should do')),
  workspace: v.optional(
    v.pipe(v.string(), v.minLength(1), v.description("the workspace directory (default: the specialist's)")),
  ),
  model: v.optional(
    v.pipe(v.string(), v.minLength(1), v.description('a model id or alias (default: the best available)')),
  ),
  max_steps: v.optional(
    v.pipe(v.number(), v.integer(), v.minValue(1), v.description('stop after this many model turns')),
  ),
});

/** The input of `get_run`. */
export const GetRunInput = v.object({
  run_id: v.pipe(v.string(), v.minLength(1), v.description('a run id, as run_task returns it')),
});

/** The input of `resume_run`: as `fabric resume`. */
export const ResumeRunInput = v.object({
  run_id: v.pipe(
    v.string(),
    v.minLength(1),
    v.description('the run to go on with (a run id, or a unique prefix)'),
  ),
  max_steps: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.description(
        'this many more model turns (required for a run that ended at its step limit; default: what its limit left)',
      ),
    ),
  ),
  force: v.optional(
    v.pipe(v.boolean(), v.description('go on although the config or pack changed since the run started')),
  ),
});

/** The input of `answer_approval`: as `fabric approvals answer`. */
export const AnswerApprovalInput = v.object({
  approval_id: v.pipe(
    v.string(),
    v.minLength(1),
    v.description('the approval to answer (as run_task returned it, or list_approvals lists it)'),
  ),
  decision: v.pipe(v.picklist(['approve', 'deny']), v.description('approve or deny the call')),
  scope: v.optional(
    v.pipe(
      v.picklist(['once', 'run', 'specialist']),
      v.description(
        'once (this call only, the default), run (the pattern for the rest of this run) or specialist (the pattern for this specialist, until revoked)',
      ),
    ),
  ),
  pattern: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(0),
      v.description(
        'which proposed pattern a run or specialist grant uses (its index; default 0, the exact call)',
      ),
    ),
  ),
  message: v.optional(v.pipe(v.string(), v.description('a message to the model with the answer'))),
});

/** The input of `list_approvals`. */
export const ListApprovalsInput = v.object({
  state: v.optional(
    v.pipe(
      v.picklist(['pending', 'approved', 'denied', 'expired', 'cancelled', 'all']),
      v.description('which approvals (default: pending)'),
    ),
  ),
  run_id: v.optional(v.pipe(v.string(), v.minLength(1), v.description("only this run's approvals"))),
});

const NoInput = v.object({});

const nullable = (type: string) => ({ type: [type, 'null'] });

/** The RunResult, as `run_task` returns it in structured content. */
const RUN_RESULT_SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    run_id: { type: 'string' },
    status: {
      type: 'string',
      enum: ['succeeded', 'failed', 'max_steps', 'cancelled', 'interrupted', 'awaiting_approval'],
    },
    payload: nullable('object'),
    error: nullable('object'),
    model: { type: 'string' },
    backend: { type: 'string' },
    steps: { type: 'integer' },
    usage: { type: 'object' },
    runlog: { type: 'string' },
    approval: {
      type: 'object',
      description:
        'awaiting_approval: the approval the run waits for (id, tool, argv or path, rule, proposals); answer it with answer_approval',
    },
  },
  required: ['run_id', 'status', 'payload', 'error', 'model', 'backend', 'steps', 'usage', 'runlog'],
};

/** What `tools/list` answers: the fabric's tools, with JSON schemas derived from valibot. */
export const FABRIC_TOOLS = [
  {
    name: 'run_task',
    title: 'Run a task with a specialist',
    description:
      "Runs a task with one of the fabric's specialists on a local model (LM Studio or Ollama) until it calls finish_task, and returns the RunResult (status, payload, steps, usage, runlog). Sends a progress notification per step and tool call when the request carries a progressToken. Cancelling the request cancels the run.",
    inputSchema: jsonSchemaOf(RunTaskInput),
    outputSchema: RUN_RESULT_SCHEMA,
  },
  {
    name: 'resume_run',
    title: 'Resume a run',
    description:
      'Goes on with a run whose process stopped (interrupted, cancelled), that ended at its step limit (with max_steps more) or because no backend answered: the same run id, its conversation rebuilt from its runlog, no recorded model turn asked again, no edit or command repeated unless that is safe. A run that cannot go on is a tool error starting with run_not_resumable and saying why and what to do. Returns the RunResult; progress as run_task.',
    inputSchema: jsonSchemaOf(ResumeRunInput),
    outputSchema: RUN_RESULT_SCHEMA,
  },
  {
    name: 'answer_approval',
    title: 'Answer an approval',
    description:
      "Answers the approval a parked run waits for (run_task or resume_run returned status awaiting_approval with the approval's id, command, rule and proposed patterns), then goes on with the run to its end and returns its RunResult; a further approval parks it again and returns at once. A second answer to the same approval is a tool error starting with approval_answered.",
    inputSchema: jsonSchemaOf(AnswerApprovalInput),
  },
  {
    name: 'list_approvals',
    title: 'List the approvals',
    description:
      'Lists approvals (default: the pending ones), newest first: id, run, specialist, the command or path, the rule, the proposed patterns, the state and the answer.',
    inputSchema: jsonSchemaOf(ListApprovalsInput),
  },
  {
    name: 'list_specialists',
    title: 'List the specialists',
    description: 'Lists the configured specialists: name, description, pack builder, model, workspace.',
    inputSchema: jsonSchemaOf(NoInput),
  },
  {
    name: 'get_run',
    title: 'Get a run',
    description:
      "Summarises a past, running or queued run, from its runlog or else the control plane (a worker's, another host's): status, payload, error, model, steps, usage, the task it was given.",
    inputSchema: jsonSchemaOf(GetRunInput),
  },
  {
    name: 'list_models',
    title: 'List the models',
    description:
      'Asks every configured backend (LM Studio, Ollama) what models it has, with their state and tool support.',
    inputSchema: jsonSchemaOf(NoInput),
  },
] as const;

export type FabricToolName = (typeof FABRIC_TOOLS)[number]['name'];

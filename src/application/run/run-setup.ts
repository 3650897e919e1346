/**
 * What the loop sets up before its first step and records at its ends: the `run_start` line, the
 * finish tool, the window plan and the paging of cut results (SPEC §3, §17).
 */
import type { ToolSpec, Usage } from '../../domain/messages.ts';
import type { SpecialistPack, Tool } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';
import type { ExecuteTaskInput } from './execute-task-input.ts';
import type { Conversation } from './model-turn.ts';
import { estimateTokens } from './compaction.ts';
import {
  CHARS_PER_TOKEN,
  MAX_RESULT_CHARS,
  type WindowPlan,
  planWindow,
  replyRoomFor,
} from './output-budget.ts';
import { READ_OUTPUT_SPEC, readOutputTool } from './read-output-tool.ts';
import { FINISH_TOOL, type ResultBudget } from './tool-dispatch.ts';

export async function recordStart(recorder: RunRecorder, input: ExecuteTaskInput): Promise<void> {
  await recorder.record({
    kind: 'run_start',
    specialist: input.specialist,
    task: input.task,
    model: input.model.id,
    backend: input.model.backend,
    ...(input.model.reason === undefined ? {} : { model_reason: input.model.reason }),
    workspace: input.workspace,
    config_digest: input.configDigest,
    fabric_version: input.fabricVersion,
    max_steps: input.limits.maxSteps,
    budget_s: Math.round(input.limits.budgetMs / 1000),
    ...(input.owner === undefined ? {} : { pid: input.owner.pid, host: input.owner.host }),
    ...(input.tags === undefined || Object.keys(input.tags).length === 0 ? {} : { tags: { ...input.tags } }),
    ...(input.resumer === undefined ? {} : { resumer: input.resumer }),
    ...(input.windowTokens === undefined ? {} : { window_tokens: input.windowTokens }),
    ...(input.windowNote === undefined ? {} : { window_note: input.windowNote }),
    ...(input.windowSource === undefined ? {} : { window_source: input.windowSource }),
    ...(input.model.server === undefined ? {} : { server_build: input.model.server }),
    ...(input.model.toolParser === undefined ? {} : { tool_parser: input.model.toolParser }),
    ...(input.profile === undefined
      ? {}
      : {
          profile: {
            matched: [...input.profile.matched],
            ...(input.profile.source === undefined ? {} : { source: input.profile.source }),
            settings: { ...input.profile.settings },
            ...(input.profile.turn.think === undefined ? {} : { think_sent: input.profile.turn.think }),
          },
        }),
  });
}

export function finishSpec(pack: SpecialistPack): ToolSpec {
  return { name: FINISH_TOOL, description: pack.finish.description, parameters: pack.finish.parameters };
}

export function usageFields(usage: Usage) {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.totalTokens,
  };
}

/**
 * How the run uses its window, from what every request carries (the system prompt, the task, the
 * tools, read_output included, as it may be offered): `context_too_small` before any request
 * when even the minimum cannot fit (SPEC §17). Without a known window, the fixed bound.
 */
export function windowPlanOf(
  input: ExecuteTaskInput,
  conversation: Conversation,
  tools: readonly Tool[],
): WindowPlan | undefined {
  const window = input.windowTokens;
  if (window === undefined) return undefined;
  const specs = [...tools.map((tool) => tool.spec), finishSpec(input.pack)];
  if (input.outputs !== undefined) specs.push(READ_OUTPUT_SPEC);
  const fixed = {
    promptTokens: estimateTokens(conversation.messages),
    toolsTokens: Math.ceil(JSON.stringify(specs).length / CHARS_PER_TOKEN),
  };
  return planWindow(window, fixed, replyRoomFor(window, input.profile?.settings.max_output_tokens));
}

/** A run's budget for tool results, and its paging tool once a result was kept (SPEC §17). */
export function resultPaging(input: ExecuteTaskInput, runId: string, plan: WindowPlan | undefined) {
  const maxChars = plan?.resultChars ?? MAX_RESULT_CHARS;
  const outputs = input.outputs;
  let cut = false;
  const budget: ResultBudget =
    outputs === undefined
      ? { maxChars }
      : {
          maxChars,
          keep: (callId, text) => {
            cut = true;
            return outputs.keep(runId, callId, text);
          },
        };
  return {
    budget,
    tool: outputs === undefined ? undefined : readOutputTool(outputs, runId, maxChars),
    cut: () => cut,
  };
}

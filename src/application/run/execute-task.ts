import { FabricError, errorMessage } from '../../domain/errors.ts';
import { type ToolSpec, type Usage, ZERO_USAGE, addUsage } from '../../domain/messages.ts';
import { type RunResult, type RunStatus, isRunInterruption } from '../../domain/run-result.ts';
import type { Conversation } from './model-turn.ts';
import type { ModelProfile } from '../../config/schema.ts';
import type {
  ChatClient,
  Clock,
  RunLogStore,
  RunObserver,
  SpecialistPack,
  Tool,
  TurnSettings,
} from '../ports.ts';
import type { RunOwner } from '../runs/liveness-ports.ts';
import { newRunId } from './run-id.ts';
import { RunRecorder } from './run-recorder.ts';
import { type StepOutcome, runStep } from './step.ts';
import { type StuckPattern, StuckWatch, describeStuck, stuckMessage } from './stuck-watch.ts';
import { estimateTokens } from './compaction.ts';
import { keepInWindow } from './window-keeper.ts';
import {
  CHARS_PER_TOKEN,
  type KeptOutputs,
  MAX_RESULT_CHARS,
  type WindowPlan,
  planWindow,
  replyRoomFor,
} from './output-budget.ts';
import { READ_OUTPUT_SPEC, READ_OUTPUT_TOOL, readOutputTool } from './read-output-tool.ts';
import { FINISH_TOOL, type ResultBudget } from './tool-dispatch.ts';

/** Everything one run needs. The interfaces build it; nothing here knows which adapter is behind a port. */
export interface ExecuteTaskInput {
  readonly specialist: string;
  readonly task: string;
  readonly pack: SpecialistPack;
  readonly chat: ChatClient;
  readonly model: { readonly id: string; readonly backend: string; readonly reason?: string };
  readonly runLogStore: RunLogStore;
  readonly observers?: readonly RunObserver[];
  readonly limits: {
    readonly maxSteps: number;
    readonly budgetMs: number;
    readonly recoverTextToolCalls: boolean;
    /** The same call answered the same this many times in a row makes a run stuck (default 4). */
    readonly stuckRepeats?: number;
  };
  readonly workspace: string | null;
  readonly configDigest: string;
  readonly fabricVersion: string;
  readonly clock: Clock;
  readonly signal: AbortSignal;
  readonly runId?: string;
  /**
   * The process running the loop, recorded in `run_start` so readers can tell a run in progress
   * from one whose process died (SPEC §6). The composition root passes its pid and host name.
   */
  readonly owner?: RunOwner;
  /** Labels recorded in `run_start` (a battery id and cell, the daemon's change and task). */
  readonly tags?: Readonly<Record<string, string>>;
  /** The model's profile and the settings each request is sent with (SPEC §16). */
  readonly profile?: RunProfile;
  /** The model's context window in tokens, when known: tool results are budgeted to it (SPEC §17). */
  readonly windowTokens?: number;
  /** How the window came to be, when a reader should know (loaded now, less than asked for). */
  readonly windowNote?: string;
  /** Where the window came from, for `run_start`. */
  readonly windowSource?: string;
  /** Where whole outputs of cut results are kept; without it a large result is only cut. */
  readonly outputs?: KeptOutputs;
}

/** A run's model profile as the loop uses it. */
export interface RunProfile {
  readonly matched: readonly string[];
  readonly source?: string;
  readonly settings: ModelProfile;
  /** What each request asks of the server. */
  readonly turn: TurnSettings;
  /** Whether the model's reasoning goes back with its turns. */
  readonly passReasoningBack: boolean;
}

const FINAL_TURN_GRACE_MS = 120_000;

/**
 * The tool loop (SPEC §3): open the pack, ask the model, run its tool calls, until `finish_task`
 * is accepted, the model answers in plain text, the step or time budget runs out, or the run is
 * cancelled. Every outcome is written to the runlog and returned; it never ends silently.
 */
export async function executeTask(input: ExecuteTaskInput): Promise<RunResult> {
  const runId = input.runId ?? newRunId(input.clock);
  const log = await input.runLogStore.create(runId);
  const recorder = new RunRecorder(log, input.observers ?? []);
  const started = Date.now();
  const state: RunState = { steps: 0, usage: ZERO_USAGE as Usage, last: undefined };
  let status: RunStatus = 'failed';
  let payload: Record<string, unknown> | null = null;
  let failure: { code: string; message: string } | null = null;
  const budget = AbortSignal.timeout(input.limits.budgetMs);
  const signal = AbortSignal.any([input.signal, budget]);
  try {
    await recordStart(recorder, input);
    await input.pack.open(input.signal);
    const tools = input.pack.tools();
    const conversation: Conversation = {
      messages: [
        { role: 'system', content: input.pack.systemPrompt },
        { role: 'user', content: input.task },
      ],
      sentCount: 0,
    };
    const toolMap = new Map(tools.map((tool) => [tool.spec.name, tool]));
    const plan = windowPlanOf(input, conversation, tools);
    const paging = resultPaging(input, runId, plan);
    let specs = [...tools.map((tool) => tool.spec), finishSpec(input.pack)];
    /** Once a result was cut, read_output is offered (a change of the tool list, once). */
    const offerPaging = () => {
      if (!paging.cut() || paging.tool === undefined || toolMap.has(READ_OUTPUT_TOOL)) return;
      toolMap.set(READ_OUTPUT_TOOL, paging.tool);
      specs = [...tools.map((tool) => tool.spec), paging.tool.spec, finishSpec(input.pack)];
    };
    let outcome: StepOutcome = { kind: 'continue' };
    const watch = new StuckWatch(input.limits.stuckRepeats);
    let warned = false;
    let stuck: StuckPattern | null = null;
    while (outcome.kind === 'continue' && state.steps < input.limits.maxSteps && !signal.aborted) {
      state.steps += 1;
      if (plan !== undefined && state.steps > 1)
        state.last = await keepInWindow({
          window: plan.windowTokens,
          replyRoom: plan.replyRoom,
          recorder,
          conversation,
          specs,
          step: state.steps,
          last: state.last,
          chat: input.chat,
          model: input.model.id,
          runId,
          ...(input.profile === undefined ? {} : { settings: input.profile.turn }),
          signal,
          addUsage: (usage) => {
            state.usage = addUsage(state.usage, usage);
          },
        });
      outcome = await runStep({
        ...stepInput(input, recorder, conversation, toolMap, runId, state),
        specs,
        budget: paging.budget,
        signal,
      });
      offerPaging();
      const seen = outcome.kind === 'continue' ? watch.observe(outcome.answered ?? []) : null;
      if (seen === null) continue;
      await recorder.record({
        kind: 'run_stuck',
        step: state.steps,
        ...seen,
        calls: [...seen.calls],
        action: warned ? 'stopped' : 'warned',
      });
      if (warned) {
        stuck = seen;
        break;
      }
      // Told once; if it goes on, the run ends (SPEC §17).
      warned = true;
      watch.reset();
      conversation.messages.push({ role: 'user', content: stuckMessage(seen) });
    }
    if (input.signal.aborted) throw input.signal.reason;
    switch (outcome.kind) {
      case 'finished':
        status = 'succeeded';
        payload = outcome.payload;
        break;
      case 'continue': {
        // Out of steps or time, or stuck: one last request that offers only finish_task (SPEC §3).
        const why =
          stuck !== null
            ? `The run is stuck: ${describeStuck(stuck)}, after the model was told.`
            : budget.aborted
              ? `The time budget of ${Math.round(input.limits.budgetMs / 1000)} s is used up.`
              : `The step limit of ${input.limits.maxSteps} is reached.`;
        conversation.messages.push({
          role: 'user',
          content: `${why} Stop working now and call finish_task: report what you did, what works, and what is left to do.`,
        });
        state.steps += 1;
        const finalSignal = AbortSignal.any([input.signal, AbortSignal.timeout(FINAL_TURN_GRACE_MS)]);
        const final = await runStep({
          // The same tools are offered, so the request's prefix is the one the server cached;
          // only finish_task is answered (SPEC §17).
          ...stepInput(input, recorder, conversation, new Map(), runId, state),
          specs,
          signal: finalSignal,
          finalTurn: true,
        });
        if (input.signal.aborted) throw input.signal.reason;
        status = stuck === null ? 'max_steps' : 'failed';
        payload =
          final.kind === 'finished'
            ? final.payload
            : { summary: `${why} The model did not report through finish_task.` };
        if (stuck !== null) failure = { code: 'run_stuck', message: why };
        break;
      }
    }
  } catch (error) {
    if (input.signal.aborted && isRunInterruption(input.signal.reason)) {
      // Its worker lost the lease: the control plane already says `interrupted`, and so does the runlog.
      status = 'interrupted';
      failure = { code: 'run_cancelled', message: input.signal.reason.message };
    } else if (input.signal.aborted) {
      status = 'cancelled';
      failure = { code: 'run_cancelled', message: 'The run was cancelled.' };
    } else {
      status = 'failed';
      failure =
        error instanceof FabricError
          ? { code: error.code, message: error.message }
          : { code: 'internal', message: `Unexpected error: ${errorMessage(error)}` };
    }
  } finally {
    await input.pack.close().catch(() => {});
  }
  try {
    await recorder.record({
      kind: 'run_end',
      status,
      payload,
      error: failure,
      steps: state.steps,
      usage: usageFields(state.usage),
      duration_ms: Date.now() - started,
    });
  } catch (error) {
    // A runlog that cannot take its end (a full disk) is still closed: no file stays open.
    await log.close().catch(() => {});
    throw error;
  }
  await log.close();
  return {
    run_id: runId,
    status,
    payload,
    error: failure,
    model: input.model.id,
    backend: input.model.backend,
    steps: state.steps,
    usage: usageFields(state.usage),
    runlog: log.location,
  };
}

function stepInput(
  input: ExecuteTaskInput,
  recorder: RunRecorder,
  conversation: Conversation,
  tools: ReadonlyMap<string, Tool>,
  runId: string,
  state: RunState,
) {
  return {
    chat: input.chat,
    model: input.model.id,
    recorder,
    conversation,
    tools,
    pack: input.pack,
    runId,
    step: state.steps,
    recoverTextToolCalls: input.limits.recoverTextToolCalls,
    ...(input.profile === undefined
      ? {}
      : {
          settings: input.profile.turn,
          passReasoningBack: input.profile.passReasoningBack,
          ...(input.profile.settings.reasoning_budget === undefined
            ? {}
            : { reasoningBudget: input.profile.settings.reasoning_budget }),
        }),
    finalTurn: false,
    addUsage: (usage: Usage) => {
      state.usage = addUsage(state.usage, usage);
      // What the server counted for this request, and how much of the conversation it held.
      state.last = { promptTokens: usage.promptTokens, sentCount: conversation.sentCount };
    },
  };
}

async function recordStart(recorder: RunRecorder, input: ExecuteTaskInput): Promise<void> {
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
    ...(input.windowTokens === undefined ? {} : { window_tokens: input.windowTokens }),
    ...(input.windowNote === undefined ? {} : { window_note: input.windowNote }),
    ...(input.windowSource === undefined ? {} : { window_source: input.windowSource }),
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

function finishSpec(pack: SpecialistPack): ToolSpec {
  return { name: FINISH_TOOL, description: pack.finish.description, parameters: pack.finish.parameters };
}

function usageFields(usage: Usage) {
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
function windowPlanOf(
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
function resultPaging(input: ExecuteTaskInput, runId: string, plan: WindowPlan | undefined) {
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

/** The loop's running state. */
interface RunState {
  steps: number;
  usage: Usage;
  /** The last request's prompt tokens, as the server counted them, and the messages it held. */
  last: { readonly promptTokens: number; readonly sentCount: number } | undefined;
}

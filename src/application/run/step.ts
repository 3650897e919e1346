import type { AssistantMessage, ToolCall, ToolSpec, Usage } from '../../domain/messages.ts';
import { type Conversation, requestModelTurn } from './model-turn.ts';
import type { ChatClient, ChatTurn, SpecialistPack, Tool, TurnSettings } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';
import { recoverCallsBeside, recoverWrittenCalls } from './written-calls.ts';
import { storeCalls } from './stored-calls.ts';
import { overescapedMessage } from './overescaped.ts';
import { handleUnfinishedText } from './unfinished-turn.ts';
import { handleEmptyTurn, handleParserFailure } from './parser-failure.ts';
import { FabricError } from '../../domain/errors.ts';
import { cutAt, cutMessage, grownLimit } from './cut-turn.ts';
import type { AnsweredCall } from './stuck-watch.ts';
import { type ResultBudget, dispatchToolCall } from './tool-dispatch.ts';
import type { CallApprovals } from './call-approvals.ts';

/** What one step of the loop came to. The loop handles each kind in an exhaustive switch. */
export type StepOutcome =
  /**
   * The calls the step ran and what each answered (the stuck watch compares them); after a turn
   * cut by the output limit, the larger limit the next request asks for (`outputLimit`).
   */
  | {
      readonly kind: 'continue';
      readonly answered?: readonly AnsweredCall[];
      readonly outputLimit?: number;
    }
  | {
      readonly kind: 'finished';
      readonly payload: Record<string, unknown>;
      readonly via: 'finish_task' | 'text';
    };

export interface StepInput {
  readonly chat: ChatClient;
  readonly model: string;
  readonly recorder: RunRecorder;
  readonly conversation: Conversation;
  readonly tools: ReadonlyMap<string, Tool>;
  readonly specs: readonly ToolSpec[];
  readonly pack: SpecialistPack;
  readonly runId: string;
  readonly step: number;
  readonly recoverTextToolCalls: boolean;
  /** How each request samples and thinks (the model's profile). */
  readonly settings?: TurnSettings;
  /** Send the turn's reasoning back with it (the profile says the model wants it). */
  readonly passReasoningBack?: boolean;
  /** Reasoning tokens a turn may spend before acting (the profile's `reasoning_budget`). */
  readonly reasoningBudget?: number;
  /** Every tool-call id rewritten to nine alphanumerics (the profile's `tool_call_ids`, Q10). */
  readonly nineAlnumIds?: boolean;
  /** The run's window, which bounds the larger output limit asked for after a cut turn. */
  readonly windowTokens?: number;
  /** This request's output limit, raised because the last turn was cut (`grownLimit`). */
  readonly raisedOutputLimit?: number;
  /** What one tool result may add, and where a larger one is kept (SPEC §17). */
  readonly budget?: ResultBudget;
  readonly finalTurn: boolean;
  /** A person's approvals (SPEC §19): asked for a call a rule says `ask` about. */
  readonly approvals?: CallApprovals | undefined;
  readonly signal: AbortSignal;
  /** Aborts the model turn only (a steer `interrupt`, SPEC §19): the step ends with nothing answered. */
  readonly turnSignal?: AbortSignal;
  addUsage(usage: Usage): void;
}

const INTERRUPTED_NOTE =
  'Not run: a person interrupted this step with a message (it follows). Read it before you go on.';

const EMPTY_REPLY_NUDGE =
  'Your reply had no text and no tool call. Call one of the tools, or call finish_task with your result.';

/** A turn that only reasoned is not an answer (SPEC §16): the model is told to act. */
const THINK_ONLY_NUDGE =
  'You reasoned but did not act: your reply had no text and no tool call. ' +
  'Call one of the tools now, or call finish_task with your result.';

/**
 * One model request and the tool calls it asked for. The step works under its own signal, tied
 * to the run's: libraries that add an abort listener per request (the openai SDK does) then add
 * it to a signal that lives one step, instead of piling listeners on the run's signal.
 */
export async function runStep(input: StepInput): Promise<StepOutcome> {
  const scope = new AbortController();
  const relay = () => scope.abort(input.signal.reason);
  if (input.signal.aborted) relay();
  else input.signal.addEventListener('abort', relay, { once: true });
  try {
    return await runScopedStep({ ...input, signal: scope.signal });
  } finally {
    input.signal.removeEventListener('abort', relay);
  }
}

async function runScopedStep(input: StepInput): Promise<StepOutcome> {
  const { recorder, conversation, step } = input;
  const raised = input.raisedOutputLimit;
  const settings =
    raised === undefined ? input.settings : { ...(input.settings ?? {}), maxOutputTokens: raised };
  let turn: ChatTurn;
  try {
    turn = await requestModelTurn({
      chat: input.chat,
      model: input.model,
      recorder,
      conversation,
      tools: input.specs,
      step,
      finalTurn: input.finalTurn,
      signal:
        input.turnSignal === undefined ? input.signal : AbortSignal.any([input.signal, input.turnSignal]),
      ...(settings === undefined ? {} : { settings }),
      ...(raised === undefined ? {} : { raisedMaxTokens: raised }),
      ...(input.reasoningBudget === undefined ? {} : { reasoningBudget: input.reasoningBudget }),
      affinity: input.runId,
    });
  } catch (error) {
    // Interrupted by a person (SPEC §19): the turn is dropped; their message is the next thing said.
    if (input.turnSignal?.aborted === true && !input.signal.aborted) return { kind: 'continue' };
    if (!(error instanceof FabricError) || error.code !== 'model_output_unparseable') throw error;
    const failed = await handleParserFailure(error, {
      specs: input.specs,
      messages: conversation.messages,
      step,
      recorder,
    });
    if (failed.kind === 'asked_again') return { kind: 'continue' };
    turn = failed.turn;
  }
  input.addUsage(turn.usage);
  let calls: readonly ToolCall[] = turn.toolCalls;
  let assistantContent = turn.content;
  const reasoning = turn.reasoning ?? '';
  // A turn cut by the output limit runs nothing and answers nothing (quirks-2 rule 1, Q12–Q16).
  const cut = cutAt(turn, settings?.maxOutputTokens);
  const cutNote = cut === null ? undefined : cutMessage(cut, input.specs, calls.length > 0);
  // The next request may write more: twice as much, as far as the window allows (Q12).
  const outputLimit = cut === null ? undefined : grownLimit(cut, turn.usage.promptTokens, input.windowTokens);
  const grown = outputLimit === undefined ? {} : { outputLimit };
  if (cut !== null && cutNote !== undefined) {
    await recorder.record({
      kind: 'model_quirk',
      step,
      quirk: 'turn_cut',
      note: 'Q12',
      detail:
        `cut at ${cut} tokens (finish_reason ${turn.finishReason ?? 'none'}); ${calls.length} call(s) not run` +
        (outputLimit === undefined
          ? '; the window leaves no room to ask for more'
          : `; the next request asks for up to ${outputLimit} tokens`),
    });
    if (calls.length === 0) {
      // A half-written call in the text (Q16) is neither recovered nor an answer.
      conversation.messages.push({ role: 'assistant', content: turn.content, toolCalls: [] });
      conversation.messages.push({ role: 'user', content: cutNote });
      return { kind: 'continue', ...grown };
    }
  }
  if (calls.length === 0 && input.recoverTextToolCalls) {
    const written = await recoverWrittenCalls(turn, input.specs, step, recorder);
    switch (written.kind) {
      case 'none':
        break;
      case 'unrun':
        // Call markup that runs nothing is neither an answer nor an action: the model is told why.
        conversation.messages.push({ role: 'assistant', content: turn.content, toolCalls: [] });
        conversation.messages.push({ role: 'user', content: written.nudge });
        return { kind: 'continue' };
      case 'calls':
        calls = written.calls;
        // The call now lives in tool_calls; sending the text back too would show it twice.
        assistantContent = '';
        break;
    }
  }
  if (calls.length > 0 && cut === null && input.recoverTextToolCalls && turn.content.trim() !== '') {
    // A server that parsed only the first call leaves the others in the text (quirks-2 Q27).
    const extra = await recoverCallsBeside(turn, calls, input.specs, step, recorder);
    if (extra.length > 0) {
      calls = [...calls, ...extra];
      // Those calls now live in tool_calls; sending the text back too would show them twice.
      assistantContent = '';
    }
  }
  if (calls.length === 0) {
    const text = turn.content.trim();
    const unfinished = turn.finishReason === null;
    if (
      text === '' &&
      reasoning.trim() === '' &&
      (turn.usage.completionTokens > 0 || unfinished) &&
      input.specs.length > 0
    ) {
      // Tokens counted and nothing delivered: the server's parser dropped it (quirks-2 rule 5, Q19);
      // a stream that ended unfinished with nothing in it: Ollama's /v1 swallowed its parser's error (Q18).
      await handleEmptyTurn(turn.usage.completionTokens, {
        unfinished,
        specs: input.specs,
        messages: conversation.messages,
        step,
        recorder,
        model: input.model,
      });
      return { kind: 'continue' };
    }
    if (text === '') {
      conversation.messages.push({ role: 'assistant', content: '', toolCalls: [] });
      conversation.messages.push({
        role: 'user',
        content: reasoning.trim() === '' ? EMPTY_REPLY_NUDGE : THINK_ONLY_NUDGE,
      });
      return { kind: 'continue' };
    }
    if (unfinished) {
      // Text in a stream with no finish chunk is what came before a failure, not an answer (Q15).
      await handleUnfinishedText(text, {
        messages: conversation.messages,
        step,
        recorder,
        model: input.model,
      });
      return { kind: 'continue' };
    }
    await recorder.record({ kind: 'text_fallback', step, content: text });
    return { kind: 'finished', payload: { summary: text }, via: 'text' };
  }
  // Stored canonical (research/local-model-quirks-2.md rule 2): no later request can be refused for it.
  const stored = await storeCalls(calls, {
    specs: input.specs,
    messages: conversation.messages,
    step,
    recorder,
    ...(input.nineAlnumIds === true ? { nineAlnumIds: true } : {}),
  });
  const assistant: AssistantMessage = {
    role: 'assistant',
    content: assistantContent,
    toolCalls: stored.map((entry) => entry.call),
    ...(input.passReasoningBack === true && reasoning.trim() !== '' ? { reasoning } : {}),
  };
  conversation.messages.push(assistant);
  // A steer `interrupt` (SPEC §19) stops the command running too; the calls after it are not run.
  const interrupt = input.turnSignal;
  const context = {
    runId: input.runId,
    step,
    signal: interrupt === undefined ? input.signal : AbortSignal.any([input.signal, interrupt]),
  };
  const answered: AnsweredCall[] = [];
  for (const { call, problem, overescaped } of stored) {
    const interrupted = interrupt?.aborted === true;
    const outcome = await dispatchToolCall({
      call,
      runSignal: input.signal,
      ...(interrupted
        ? { problem: { reason: 'refused', message: INTERRUPTED_NOTE } as const }
        : cutNote !== undefined
          ? { problem: { reason: 'refused', message: cutNote } as const }
          : problem !== undefined
            ? {
                problem: {
                  reason: 'invalid_json',
                  message: `${problem} Nothing ran: call ${call.name} again with its arguments as one JSON object.`,
                },
              }
            : overescaped === undefined
              ? {}
              : {
                  // Code escaped one level too many (Q4): never repaired silently, asked again.
                  problem: {
                    reason: 'invalid_arguments',
                    message: overescapedMessage(call.name, overescaped),
                  },
                }),
      tools: input.tools,
      pack: input.pack,
      recorder,
      context,
      applyGate: !input.finalTurn,
      onlyFinish: input.finalTurn,
      ...(input.budget === undefined ? {} : { budget: input.budget }),
      ...(input.approvals === undefined ? {} : { approvals: input.approvals }),
    });
    switch (outcome.kind) {
      case 'answered':
        conversation.messages.push(outcome.message);
        answered.push({ name: call.name, arguments: call.arguments, result: outcome.message.content });
        break;
      case 'finished':
        return { kind: 'finished', payload: outcome.payload, via: 'finish_task' };
    }
  }
  return { kind: 'continue', answered, ...grown };
}

import type { ChatMessage, ToolSpec } from '../../domain/messages.ts';
import type { ThinkLevel } from '../../config/schema.ts';
import type { ChatClient, ChatTurn, TurnSettings } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';

/** The conversation so far, and how much of it the last request already carried. */
export interface Conversation {
  readonly messages: ChatMessage[];
  /** Index of the first message not yet sent, for `llm_request.new_messages`. */
  sentCount: number;
}

/** What one model turn is asked with. */
export interface ModelTurnOptions {
  chat: ChatClient;
  model: string;
  recorder: RunRecorder;
  conversation: Conversation;
  tools: readonly ToolSpec[];
  step: number;
  finalTurn: boolean;
  signal: AbortSignal;
  settings?: TurnSettings;
  /** The run's id: its requests stay on one server (SPEC §17). */
  affinity?: string;
  /** The output limit, raised for the turn after a cut one: recorded in `llm_request.max_tokens`. */
  raisedMaxTokens?: number;
  /**
   * Reasoning tokens a turn may spend before any content or call (the profile's
   * `reasoning_budget`); past it the turn is cut and asked again once, a think level lower.
   */
  reasoningBudget?: number;
}

/** Characters per token, for a budget counted while the reasoning streams (no tokenizer here). */
const CHARS_PER_TOKEN = 4;

/** One level lower: high → medium → low → off. */
const LOWER: Readonly<Record<ThinkLevel, ThinkLevel>> = {
  high: 'medium',
  medium: 'low',
  low: 'off',
  off: 'off',
};

/**
 * Sends one request and records `llm_request`, `llm_retry`s and `llm_response`. A turn that
 * reasons past the budget with no content and no call is cut, recorded (`reasoning_cut`) and
 * asked again once at a lower think level (SPEC §16).
 */
export async function requestModelTurn(options: ModelTurnOptions): Promise<ChatTurn> {
  const budget = options.reasoningBudget;
  if (budget === undefined) return whole(await attemptTurn(options, undefined));
  const cut = await attemptTurn(options, budget * CHARS_PER_TOKEN);
  if (!('cutAt' in cut)) return cut;
  const before = options.settings?.think;
  const after = before === undefined ? undefined : LOWER[before];
  await options.recorder.record({
    kind: 'reasoning_cut',
    step: options.step,
    reasoning_chars: cut.cutAt,
    budget_tokens: budget,
    ...(before === undefined ? {} : { think_before: before }),
    ...(after === undefined ? {} : { think_after: after }),
  });
  const settings =
    options.settings === undefined
      ? undefined
      : { ...options.settings, ...(after === undefined ? {} : { think: after }) };
  return whole(await attemptTurn({ ...options, ...(settings === undefined ? {} : { settings }) }, undefined));
}

/** A turn asked without a budget is never cut. */
function whole(turn: ChatTurn | { readonly cutAt: number }): ChatTurn {
  if ('cutAt' in turn) throw new Error('a turn asked without a reasoning budget was cut');
  return turn;
}

async function attemptTurn(
  options: ModelTurnOptions,
  budgetChars: number | undefined,
): Promise<ChatTurn | { readonly cutAt: number }> {
  const { chat, model, recorder, conversation, tools, step, finalTurn } = options;
  const newMessages = conversation.messages.slice(conversation.sentCount);
  conversation.sentCount = conversation.messages.length;
  await recorder.record({
    kind: 'llm_request',
    step,
    model,
    messages: conversation.messages.length,
    tools: tools.map((tool) => tool.name),
    final_turn: finalTurn,
    ...(options.raisedMaxTokens === undefined ? {} : { max_tokens: options.raisedMaxTokens }),
    new_messages: newMessages.map(toLogMessage),
  });
  const retries: Promise<unknown>[] = [];
  // The turn's own controller: the run's signal, or the budget, ends the request.
  const budget = new AbortController();
  const signal =
    budgetChars === undefined ? options.signal : AbortSignal.any([options.signal, budget.signal]);
  let reasoned = 0;
  let acted = false;
  let turn: ChatTurn;
  // Time to first token (SPEC §21): from the request to the first thing the model streamed.
  const started = Date.now();
  let firstTokenAt: number | undefined;
  try {
    turn = await chat.complete(
      {
        model,
        messages: [...conversation.messages],
        // The final turn offers finish_task alone rather than `tool_choice: required`, which
        // LM Studio's MLX engine rejects and Ollama ignores.
        tools,
        signal,
        ...(options.settings === undefined ? {} : { settings: options.settings }),
        ...(options.affinity === undefined ? {} : { affinity: options.affinity }),
      },
      (event) => {
        if (event.type !== 'retry') firstTokenAt ??= Date.now();
        switch (event.type) {
          case 'text':
            if (event.text.trim() !== '') acted = true;
            recorder.text(event.text);
            break;
          case 'reasoning':
            reasoned += event.text.length;
            if (budgetChars !== undefined && !acted && reasoned > budgetChars) budget.abort();
            break;
          case 'tool_call_started':
            acted = true;
            recorder.toolCallStarted(event.name);
            break;
          case 'retry':
            retries.push(
              recorder.record({
                kind: 'llm_retry',
                step,
                attempt: event.attempt,
                delay_ms: event.delayMs,
                reason: event.reason,
              }),
            );
            break;
        }
      },
    );
  } catch (error) {
    await Promise.all(retries);
    if (budget.signal.aborted && !options.signal.aborted) return { cutAt: reasoned };
    throw error;
  }
  await Promise.all(retries);
  await recorder.record({
    kind: 'llm_response',
    step,
    content: turn.content,
    ...(turn.reasoning ? { reasoning: turn.reasoning } : {}),
    ...(turn.reasoningTokens === undefined ? {} : { reasoning_tokens: turn.reasoningTokens }),
    tool_calls: turn.toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.arguments })),
    finish_reason: turn.finishReason,
    usage: {
      prompt_tokens: turn.usage.promptTokens,
      completion_tokens: turn.usage.completionTokens,
      total_tokens: turn.usage.totalTokens,
      ...(turn.usage.cachedTokens === undefined ? {} : { cached_tokens: turn.usage.cachedTokens }),
    },
    latency_ms: turn.latencyMs,
    ...(firstTokenAt === undefined ? {} : { ttft_ms: firstTokenAt - started }),
    attempts: turn.attempts,
    backend: turn.backend,
  });
  return turn;
}

/** The wire-neutral shape of a message in the runlog. */
export function toLogMessage(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
    case 'user':
      return { role: message.role, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.reasoning === undefined ? {} : { reasoning: message.reasoning }),
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          name: call.name,
          arguments: call.arguments,
        })),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, name: message.name, content: message.content };
  }
}

/** A runlog message as the conversation held it: the inverse of `toLogMessage` (SPEC §18). */
export function fromLogMessage(logged: unknown): ChatMessage {
  const m = logged as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' ? value : '');
  switch (m.role) {
    case 'system':
      return { role: 'system', content: text(m.content) };
    case 'assistant': {
      const calls = Array.isArray(m.tool_calls) ? (m.tool_calls as Record<string, unknown>[]) : [];
      return {
        role: 'assistant',
        content: text(m.content),
        ...(typeof m.reasoning === 'string' ? { reasoning: m.reasoning } : {}),
        toolCalls: calls.map((call) => ({
          id: text(call.id),
          name: text(call.name),
          arguments: text(call.arguments),
        })),
      };
    }
    case 'tool':
      return { role: 'tool', toolCallId: text(m.tool_call_id), name: text(m.name), content: text(m.content) };
    default:
      return { role: 'user', content: text(m.content) };
  }
}

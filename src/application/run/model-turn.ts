import type { ChatMessage, ToolSpec } from '../../domain/messages.ts';
import type { ChatClient, ChatTurn, TurnSettings } from '../ports.ts';
import type { RunRecorder } from './run-recorder.ts';

/** The conversation so far, and how much of it the last request already carried. */
export interface Conversation {
  readonly messages: ChatMessage[];
  /** Index of the first message not yet sent, for `llm_request.new_messages`. */
  sentCount: number;
}

/** Sends one request and records `llm_request`, `llm_retry`s and `llm_response`. */
export async function requestModelTurn(options: {
  chat: ChatClient;
  model: string;
  recorder: RunRecorder;
  conversation: Conversation;
  tools: readonly ToolSpec[];
  step: number;
  finalTurn: boolean;
  signal: AbortSignal;
  settings?: TurnSettings;
}): Promise<ChatTurn> {
  const { chat, model, recorder, conversation, tools, step, finalTurn, signal } = options;
  const newMessages = conversation.messages.slice(conversation.sentCount);
  conversation.sentCount = conversation.messages.length;
  await recorder.record({
    kind: 'llm_request',
    step,
    model,
    messages: conversation.messages.length,
    tools: tools.map((tool) => tool.name),
    final_turn: finalTurn,
    new_messages: newMessages.map(toLogMessage),
  });
  const retries: Promise<unknown>[] = [];
  const turn = await chat.complete(
    {
      model,
      messages: [...conversation.messages],
      // The final turn offers finish_task alone rather than `tool_choice: required`, which
      // LM Studio's MLX engine rejects and Ollama ignores.
      tools,
      signal,
      ...(options.settings === undefined ? {} : { settings: options.settings }),
    },
    (event) => {
      switch (event.type) {
        case 'text':
          recorder.text(event.text);
          break;
        case 'tool_call_started':
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
    },
    latency_ms: turn.latencyMs,
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

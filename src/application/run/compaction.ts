/**
 * Keeping a long run inside its window (SPEC §17). Occupancy is the server's `prompt_tokens` for
 * the last request plus an estimate of what was added since (the estimate alone when the server
 * reports no usage). Before a request would pass about 80% of the window, the oldest tool results
 * are replaced by one-line stubs, in one chunk large enough (down to about half) that compaction
 * is rare and the prefix a server has cached changes seldom; never the system prompt, the task or
 * the last turns.
 */
import type { ChatMessage, ToolMessage } from '../../domain/messages.ts';
import type { Conversation } from './model-turn.ts';
import { CHARS_PER_TOKEN } from './output-budget.ts';

/** Compaction starts past this share of the window... */
export const COMPACT_AT = 0.8;
/** ...and stubs results until the conversation is back under this share. */
const COMPACT_TO = 0.5;
/**
 * Where the model's working memory starts: its last turn (the call and every result it got, and
 * anything said after), never stubbed or summarised; at least the last two messages.
 */
export function lastTurnStart(messages: readonly ChatMessage[]): number {
  let i = messages.length - 2;
  while (i > 2 && messages[i]?.role !== 'assistant') i -= 1;
  return Math.max(2, Math.min(i, messages.length - 2));
}
/** A result shorter than this is not worth a stub. */
const STUB_MIN_CHARS = 300;

/** A message's estimated tokens: its text, its calls' arguments, a little for the framing. */
function messageTokens(message: ChatMessage): number {
  const calls =
    message.role === 'assistant'
      ? message.toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, 0)
      : 0;
  return Math.ceil((message.content.length + calls) / CHARS_PER_TOKEN) + 4;
}

export function estimateTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((n, message) => n + messageTokens(message), 0);
}

/** What the next request will hold, in tokens. */
export function occupancy(
  conversation: Conversation,
  last: { readonly promptTokens: number; readonly sentCount: number } | undefined,
  toolsChars: () => number,
): number {
  if (last !== undefined && last.promptTokens > 0)
    return last.promptTokens + estimateTokens(conversation.messages.slice(last.sentCount));
  // Without the server's count: the whole conversation, and the tools, estimated.
  return estimateTokens(conversation.messages) + Math.ceil(toolsChars() / CHARS_PER_TOKEN);
}

/** What a compaction did. */
export interface Compaction {
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly stubbed: number;
  /** The first message it changed: the prefix a server cached ends there. */
  readonly firstChanged: number;
}

/**
 * Stubs the oldest tool results when `tokens` plus `replyRoom` pass 80% of `window`, until they
 * are under half of it; null when nothing needed doing or nothing could be stubbed.
 */
export function compactIfNeeded(
  conversation: Conversation,
  tokens: number,
  window: number,
  replyRoom: number,
): Compaction | null {
  if (tokens + replyRoom <= window * COMPACT_AT) return null;
  const target = window * COMPACT_TO - replyRoom;
  const messages = conversation.messages;
  let after = tokens;
  let stubbed = 0;
  let firstChanged = messages.length;
  // Never the system prompt and the task (the first two), never the last turn.
  const keepFrom = lastTurnStart(messages);
  for (let i = 2; i < keepFrom && after > target; i += 1) {
    const message = messages[i]!;
    const stub = stubOf(message);
    if (stub === null) continue;
    after -= messageTokens(message) - messageTokens(stub);
    messages[i] = stub;
    stubbed += 1;
    firstChanged = Math.min(firstChanged, i);
  }
  return stubbed === 0
    ? null
    : { tokensBefore: tokens, tokensAfter: Math.max(0, Math.round(after)), stubbed, firstChanged };
}

/**
 * A message's stub, or null when it is not worth one: a long tool result becomes one short line;
 * an old call with long string arguments (a write_file's content) keeps its shape, as servers
 * want valid arguments, with each long string replaced by a note of its length.
 */
function stubOf(message: ChatMessage): ChatMessage | null {
  if (message.role === 'tool') {
    if (message.content.length < STUB_MIN_CHARS) return null;
    // One short line: stubs stay in the conversation, so they must cost little.
    const stub: ToolMessage = {
      ...message,
      content: `[${message.name} result (${message.content.length} chars) removed to fit the window; call again if needed]`,
    };
    return stub;
  }
  if (
    message.role !== 'assistant' ||
    message.toolCalls.every((call) => call.arguments.length < STUB_MIN_CHARS)
  )
    return null;
  const toolCalls = message.toolCalls.map((call) => ({ ...call, arguments: shortArguments(call.arguments) }));
  // Arguments with no long string (or not JSON) stay as they are: nothing to gain.
  if (toolCalls.every((call, i) => call.arguments === message.toolCalls[i]!.arguments)) return null;
  return { ...message, toolCalls };
}

function shortArguments(text: string): string {
  if (text.length < STUB_MIN_CHARS) return text;
  try {
    const args = JSON.parse(text) as unknown;
    if (args === null || typeof args !== 'object' || Array.isArray(args)) return text;
    return JSON.stringify(
      Object.fromEntries(
        Object.entries(args).map(([key, value]) =>
          typeof value === 'string' && value.length > 200
            ? [key, `[${value.length} chars removed to fit the window]`]
            : [key, value],
        ),
      ),
    );
  } catch {
    return text;
  }
}

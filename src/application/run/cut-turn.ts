/**
 * A turn cut by the output limit (research/local-model-quirks-2.md rule 1, Q12–Q16): whatever its
 * `finish_reason` claims — vLLM says `tool_calls` for a call cut mid-arguments (vllm #53269,
 * #58228) — a turn is cut when the server says `length` or its completion reached `max_tokens`.
 * Its calls are never run and its text is not an answer; the model is told how to make the step
 * smaller. Pure.
 */
import type { ToolSpec } from '../../domain/messages.ts';
import type { ChatTurn } from '../ports.ts';

/** The tokens the turn was cut at, or null when it ended on its own. */
export function cutAt(
  turn: Pick<ChatTurn, 'finishReason' | 'usage'>,
  maxTokens: number | undefined,
): number | null {
  const tokens = turn.usage.completionTokens;
  if (maxTokens !== undefined && tokens >= maxTokens) return tokens;
  if (turn.finishReason === 'length') return tokens > 0 ? tokens : (maxTokens ?? 0);
  return null;
}

/** What the model hears about a cut turn: how long it was, and how to make the step smaller. */
export function cutMessage(tokens: number, specs: readonly ToolSpec[], hadCalls: boolean): string {
  const names = new Set(specs.map((spec) => spec.name));
  const limit = tokens > 0 ? `at ${tokens} tokens, the most one reply may have` : 'at the output limit';
  const what = hadCalls ? 'so its tool call was not run' : 'so it is not taken as your answer';
  const ways = [
    ...(names.has('edit_file') && names.has('write_file')
      ? ['change part of a file with edit_file instead of writing the whole file with write_file']
      : []),
    ...(names.has('write_file') ? ['write a large file in several smaller steps'] : []),
    'give a shorter answer',
  ];
  return `Your reply was cut off ${limit}, ${what}. Make the step smaller: ${ways.join('; ')}.`;
}

/** Tokens left aside for what the next request adds beside the cut turn (the note, a tool result's start). */
const ROOM_MARGIN = 256;

/**
 * The output limit the turn after one cut at `tokens` asks for (Q12: "raise `max_tokens` for that
 * step"): twice as much, as far as the window leaves room beside the prompt that turn will carry
 * (the cut request's prompt and the cut turn itself). Undefined when the window leaves no more.
 */
export function grownLimit(
  tokens: number,
  promptTokens: number,
  windowTokens: number | undefined,
): number | undefined {
  if (tokens <= 0) return undefined;
  const wanted = tokens * 2;
  const room = windowTokens === undefined ? wanted : windowTokens - promptTokens - tokens - ROOM_MARGIN;
  const limit = Math.min(wanted, room);
  return limit > tokens ? limit : undefined;
}

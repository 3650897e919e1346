/** Pure checks of the probe suite (probe-suite.ts): reading calls from a turn, and the figures. */
import type { ChatMessage } from '../../domain/messages.ts';
import { readWrittenCalls } from '../run/text-call-dialects.ts';
import type { ChatTurn } from '../ports.ts';

/** A call as the probe read it: from the server's field, or from text in a dialect. */
export interface SeenCall {
  readonly name: string;
  readonly args: unknown;
  readonly argsText: string;
  readonly via: 'native' | 'dialect';
  readonly dialect?: string;
}

export function callsOf(turn: ChatTurn): SeenCall[] {
  if (turn.toolCalls.length > 0)
    return turn.toolCalls.map((call) => ({
      name: call.name,
      args: parseArgs(call.arguments),
      argsText: call.arguments,
      via: 'native',
    }));
  const written = readWrittenCalls(turn.content);
  if (written === null) return [];
  return written.calls.map((call) => {
    const args = typeof call.args === 'string' ? parseArgs(call.args) : call.args;
    return {
      name: call.name,
      args,
      argsText: JSON.stringify(args),
      via: 'dialect',
      dialect: written.dialect,
    };
  });
}

export function parseArgs(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isEmptyArgs(args: unknown): boolean {
  return isObject(args) && Object.keys(args).length === 0;
}

/** Why finish_task's arguments do not match its schema, or null when they do. */
export function finishProblem(args: unknown): string | null {
  if (!isObject(args)) return 'arguments are not a JSON object';
  if (args.status !== 'done' && args.status !== 'failed')
    return `status ${JSON.stringify(args.status)} is not "done" or "failed"`;
  if (typeof args.summary !== 'string' || args.summary === '') return 'summary is not a non-empty string';
  if (typeof args.files_changed !== 'number' || !Number.isInteger(args.files_changed))
    return `files_changed ${JSON.stringify(args.files_changed)} is not an integer`;
  return null;
}

export function speed(turn: ChatTurn, ttftMs: number | null): Record<string, number> {
  const figures: Record<string, number> = {
    latency_ms: turn.latencyMs,
    completion_tokens: turn.usage.completionTokens,
  };
  if (ttftMs !== null) figures.ttft_ms = ttftMs;
  const generating = turn.latencyMs - (ttftMs ?? 0);
  if (generating > 0 && turn.usage.completionTokens > 0)
    figures.gen_tok_s = Math.round((turn.usage.completionTokens / generating) * 1000);
  return figures;
}

export function names(calls: readonly SeenCall[]): string {
  return calls.map((call) => `${call.name}(${call.argsText})`).join(', ');
}

export function viaText(call: SeenCall): string {
  return call.via === 'native' ? '(native)' : `(as text, ${call.dialect})`;
}

export function describeTurn(asked: {
  readonly turn: ChatTurn;
  readonly calls: readonly SeenCall[];
}): string {
  return asked.calls.length > 0 ? names(asked.calls) : quote(asked.turn.content);
}

export function quote(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat === '' ? '(empty)' : `"${flat.length > 80 ? `${flat.slice(0, 77)}...` : flat}"`;
}

/** Messages as kept in an exchange: a long filler is cut, so a report stays small. */
export function shorten(messages: readonly ChatMessage[]): unknown[] {
  return messages.map((message) =>
    message.content.length > 400
      ? { ...message, content: `${message.content.slice(0, 200)}... (${message.content.length} characters)` }
      : message,
  );
}

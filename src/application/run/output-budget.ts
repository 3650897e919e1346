/**
 * Tool output within the window's budget (SPEC §17): a result larger than its share of the
 * model's context window is cut to a head and a tail, with a marker saying what was left out and
 * how to read it; the whole output is kept with the run, and `read_output` pages through it.
 */
import { FabricError } from '../../domain/errors.ts';

/** Where a run's whole tool outputs are kept (`runs/<id>/outputs/`), and read back. */
export interface KeptOutputs {
  /** Keeps `text` as the output of `callId`; returns where it is (a path, for people). */
  keep(runId: string, callId: string, text: string): Promise<string>;
  /** The kept output of `callId`, or null when there is none. */
  read(runId: string, callId: string): Promise<string | null>;
}

/** What one result may add to the conversation: the bound without a known window, and the most with one. */
export const MAX_RESULT_CHARS = 64 * 1024;

/** The smallest budget: below it a result says too little to be worth reading. */
const MIN_RESULT_CHARS = 2000;

/** Characters per token, counted low so budgets and occupancy err on the safe side (no tokenizer here). */
export const CHARS_PER_TOKEN = 3;

/** What every request of a run carries whatever it has done: the system prompt, the task, the tools. */
export interface FixedCost {
  /** The system prompt and the task, in tokens (estimated). */
  readonly promptTokens: number;
  /** The tool list as sent, in tokens (estimated). */
  readonly toolsTokens: number;
}

/** How a run uses its window: each result's budget and the room kept for the reply. */
export interface WindowPlan {
  readonly windowTokens: number;
  readonly resultChars: number;
  readonly replyRoom: number;
}

/** The reply's room: the profile's `max_output_tokens` (1024 by default), at most a quarter of the window. */
export function replyRoomFor(windowTokens: number, maxOutputTokens: number | undefined): number {
  return Math.min(maxOutputTokens ?? 1024, Math.floor(windowTokens / 4));
}

/**
 * Characters per token at the most, for the one test that refuses a run: it must refuse only a
 * window that certainly cannot hold the run, so it counts what a tokenizer would at best.
 */
const CHARS_PER_TOKEN_AT_MOST = 4;

/**
 * A run's window plan (SPEC §17): a result may take a quarter of the window, and no more than what
 * is left beside the fixed cost and the reply. A window that cannot hold the fixed cost and one
 * result of the smallest budget, even counted at their smallest, is `context_too_small`, said
 * before any request (the reply's room is not asked for there: a model may answer in less).
 * `fixed` is counted with `CHARS_PER_TOKEN`.
 */
export function planWindow(windowTokens: number, fixed: FixedCost, replyRoom: number): WindowPlan {
  const least = (tokens: number) => Math.ceil((tokens * CHARS_PER_TOKEN) / CHARS_PER_TOKEN_AT_MOST);
  const minResult = Math.ceil(MIN_RESULT_CHARS / CHARS_PER_TOKEN_AT_MOST);
  const prompt = least(fixed.promptTokens);
  const tools = least(fixed.toolsTokens);
  const needs = prompt + tools + minResult;
  if (needs > windowTokens)
    throw new FabricError(
      'context_too_small',
      `The model's context window is ${windowTokens} tokens, too small for this run: it needs at least about ${needs} ` +
        `(system prompt and task ~${prompt}, tools ~${tools}, one tool result ~${minResult}), ` +
        `and a reply needs room beside that. Load the model with a larger context (llm.context_length, or a profile's ` +
        'context_length), or choose a model with a larger window.',
    );
  const left = windowTokens - fixed.promptTokens - fixed.toolsTokens - replyRoom;
  // A quarter of the window, so a few results and the reply still fit.
  const share = Math.min(windowTokens / 4, left);
  return {
    windowTokens,
    resultChars: Math.min(MAX_RESULT_CHARS, Math.max(MIN_RESULT_CHARS, Math.floor(share * CHARS_PER_TOKEN))),
    replyRoom,
  };
}

/** The line numbers of `text` at character offsets `from` and `to` (1-based). */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i >= 0 && i < offset; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

/**
 * `text` cut to `maxChars`: 60% head, 40% tail, and between them a marker naming what was left
 * out and the `read_output` call that reads on from there.
 */
export function cutResult(text: string, maxChars: number, callId: string): string {
  if (text.length <= maxChars) return text;
  const headChars = Math.floor(maxChars * 0.6);
  const tailChars = maxChars - headChars;
  const tailFrom = text.length - tailChars;
  const lines = lineAt(text, text.length);
  const marker =
    `\n[… ${text.length - headChars - tailChars} of ${text.length} characters left out here ` +
    `(lines ${lineAt(text, headChars)}–${lineAt(text, tailFrom)} of ${lines}). The whole output is kept: ` +
    `call read_output with {"call_id": "${callId}", "offset": ${headChars}} to read on from there.]\n`;
  return `${text.slice(0, headChars)}${marker}${text.slice(tailFrom)}`;
}

/** One page of a kept output, with where the next one starts. */
export function pageOf(text: string, offset: number, maxChars: number): string {
  const from = Math.min(Math.max(0, offset), text.length);
  const to = Math.min(text.length, from + maxChars);
  const next =
    to < text.length ? `next: call read_output with "offset": ${to}.` : 'this is the end of the output.';
  return `[characters ${from}–${to} of ${text.length}; ${next}]\n${text.slice(from, to)}`;
}

import type { ChatMessage, ToolSpec } from '../../../domain/messages.ts';

/** The smallest window the fabric asks for: below it, a system prompt plus tools barely fit. */
export const MIN_NUM_CTX = 8192;
/** Tokens kept free for the model's reply (tool calls with file contents are long). */
export const REPLY_HEADROOM = 4096;
/** A prompt within this many tokens of the window filled it: Ollama cut it (ollama#7987). */
export const TRUNCATION_MARGIN = 32;

/**
 * A deliberately high token estimate of a request: three characters a token (code and JSON run
 * denser than the four of English prose), over the messages and the tool schemas together.
 */
export function estimateRequestTokens(messages: readonly ChatMessage[], tools: readonly ToolSpec[]): number {
  const chars = JSON.stringify(messages).length + JSON.stringify(tools).length;
  return Math.ceil(chars / 3);
}

/**
 * The `num_ctx` a request needs (ADR 0004): the estimate plus reply headroom, rounded up to a power
 * of two (so a growing conversation reloads the model only at doublings), at least 8192; a larger
 * window the model is already loaded with is kept, to avoid a reload; never above the trained length.
 */
export function contextWindowFor(
  estimatedTokens: number,
  model: { readonly loadedContext?: number | undefined; readonly trainedContext?: number | undefined },
): number {
  const wanted = Math.max(MIN_NUM_CTX, 2 ** Math.ceil(Math.log2(estimatedTokens + REPLY_HEADROOM)));
  const window = Math.max(wanted, model.loadedContext ?? 0);
  return model.trainedContext === undefined ? window : Math.min(window, model.trainedContext);
}

/** True when the prompt filled the window: the server dropped or cut part of it. */
export function promptWasTruncated(promptEvalCount: number | undefined, numCtx: number): boolean {
  return promptEvalCount !== undefined && promptEvalCount >= numCtx - TRUNCATION_MARGIN;
}

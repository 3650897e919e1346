import { nineAlnumId } from '../../../domain/tool-call-ids.ts';
import { ThinkSplitter } from '../think-splitter.ts';
import type {
  ChatClient,
  ChatRequest,
  ChatStreamEvent,
  ChatTurn,
  TurnSettings,
} from '../../../application/ports.ts';
import type { ThinkLevel } from '../../../config/schema.ts';
import { FabricError, errorMessage } from '../../../domain/errors.ts';
import type { ToolCall } from '../../../domain/messages.ts';
import type { RetryPolicy } from '../backoff.ts';
import { type ClassifiedFault, type RequestTarget, classifyStatus } from '../classify-error.ts';
import { bodyError } from '../http-json.ts';
import { withRetries } from '../retry-loop.ts';
import { contextWindowFor, estimateRequestTokens, promptWasTruncated } from './context-window.ts';
import { parseOllamaLine, toOllamaMessages, toOllamaTools } from './ollama-wire.ts';

/** What the client knows of a model's context: loaded window (`/api/ps`) and trained maximum (`/api/show`). */
export interface OllamaContextInfo {
  readonly loadedContext?: number | undefined;
  readonly trainedContext?: number | undefined;
}

export interface OllamaChatClientOptions {
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  readonly requestTimeoutMs: number;
  readonly temperature?: number | undefined;
  /** Context facts of a model, from the catalog; undefined when unknown. */
  readonly contextOf?: (model: string) => OllamaContextInfo | undefined;
  readonly random?: () => number;
}

/** An HTTP refusal or an in-stream error line, with the server's own words. */
class ServerFault extends Error {
  readonly status: number | undefined;
  constructor(status: number | undefined, message: string) {
    super(message);
    this.status = status;
  }
}

/**
 * A `ChatClient` on Ollama's native `/api/chat` (NDJSON). Unlike Ollama's `/v1`, it can set the
 * context window: `options.num_ctx` is the window the request needs, bounded by the model's trained
 * length, and `truncate: false` makes servers >= 0.12.4 refuse an oversized prompt instead of
 * silently dropping messages. A prompt that still filled the window fails with `context_overflow`.
 */
export class OllamaChatClient implements ChatClient {
  readonly backend = 'ollama' as const;
  readonly #options: OllamaChatClientOptions;

  constructor(options: OllamaChatClientOptions) {
    this.#options = options;
  }

  get label(): string {
    return `ollama ${this.#options.baseUrl}`;
  }

  async complete(
    request: ChatRequest,
    onEvent: (event: ChatStreamEvent) => void = () => {},
  ): Promise<ChatTurn> {
    const started = Date.now();
    const target: RequestTarget = {
      backendLabel: this.label,
      baseUrl: this.#options.baseUrl,
      model: request.model,
    };
    const sized = contextWindowFor(
      estimateRequestTokens(request.messages, request.tools),
      this.#options.contextOf?.(request.model) ?? {},
    );
    // The profile's context_length caps the window (a smaller one fits in less memory).
    const cap = request.settings?.contextLength;
    const numCtx = cap === undefined ? sized : Math.min(sized, cap);
    const { value, attempts } = await withRetries({
      label: this.label,
      retry: this.#options.retry,
      random: this.#options.random,
      signal: request.signal,
      onEvent,
      attempt: () => this.#attempt(request, numCtx, onEvent),
      // Errors the attempt already words (context overflow) pass through as they are.
      classify: (error) =>
        error instanceof FabricError ? { transient: false, error } : this.#classify(error, target),
      giveUpHint: `Check that Ollama is running and has "${request.model}" pulled, then run again.`,
    });
    return { ...value, latencyMs: Date.now() - started, attempts, backend: this.label };
  }

  #classify(error: unknown, target: RequestTarget): ClassifiedFault {
    if (error instanceof ServerFault) return classifyStatus(error.status, error.message, target, error);
    // fetch rejects with a TypeError whose cause names the socket error (ECONNREFUSED, ECONNRESET).
    const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
    if (typeof cause?.code === 'string') {
      return {
        transient: true,
        reason: `cannot reach ${target.baseUrl} (${errorMessage(error)} ${cause.code})`,
      };
    }
    // Anything else while reading (a reset socket, a torn line, the request timeout) is a cut stream.
    return { transient: true, reason: `stream failed: ${errorMessage(error)}` };
  }

  async #attempt(request: ChatRequest, numCtx: number, onEvent: (event: ChatStreamEvent) => void) {
    const timeout = AbortSignal.timeout(this.#options.requestTimeoutMs);
    const signal = AbortSignal.any([request.signal, timeout]);
    const options: Record<string, number> = { num_ctx: numCtx, ...ollamaSampling(request.settings) };
    const temperature = request.settings?.temperature ?? this.#options.temperature;
    if (temperature !== undefined) options.temperature = temperature;
    const thinkParam = ollamaThink(request.model, request.settings?.think);
    const response = await fetch(`${this.#options.baseUrl}/api/chat`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      signal,
      body: JSON.stringify({
        model: request.model,
        messages: toOllamaMessages(request.messages),
        ...(request.tools.length === 0 ? {} : { tools: toOllamaTools(request.tools) }),
        stream: true,
        options,
        ...(thinkParam === undefined ? {} : { think: thinkParam }),
        truncate: false,
      }),
    });
    if (!response.ok || response.body === null) {
      const text = await response.text();
      let message = text;
      try {
        message = bodyError(JSON.parse(text)) ?? text;
      } catch {}
      throw new ServerFault(response.status, message || `HTTP ${response.status}`);
    }
    // Content may still carry `<think>` when a template writes it there; `thinking` is its own field.
    const think = new ThinkSplitter();
    const toolCalls: ToolCall[] = [];
    let final: ReturnType<typeof parseOllamaLine> | undefined;
    for await (const text of ndjsonLines(response.body)) {
      const line = parseOllamaLine(text);
      // A mid-stream failure is a line with an `error` field, still under HTTP 200 (errors.mdx).
      if (line.error !== undefined) throw new ServerFault(undefined, line.error);
      if (line.thinking !== '') {
        think.addField(line.thinking);
        onEvent({ type: 'reasoning', text: line.thinking });
      }
      if (line.content !== '') {
        const split = think.push(line.content);
        if (split.reasoning !== '') onEvent({ type: 'reasoning', text: split.reasoning });
        if (split.content !== '') onEvent({ type: 'text', text: split.content });
      }
      for (const call of line.toolCalls) {
        toolCalls.push({
          id: call.id ?? nineAlnumId(),
          name: call.name,
          arguments: call.arguments,
        });
        onEvent({ type: 'tool_call_started', name: call.name });
      }
      if (line.done) final = line;
    }
    if (final === undefined) throw new Error('the stream ended before the model finished (no done line)');
    if (promptWasTruncated(final.promptEvalCount, numCtx)) {
      throw new FabricError(
        'context_overflow',
        `The prompt filled the whole context window of "${request.model}" on ${this.label} ` +
          `(${final.promptEvalCount} prompt tokens, num_ctx ${numCtx}), so Ollama cut part of it. ` +
          (request.settings?.contextLength !== undefined && numCtx === request.settings.contextLength
            ? `The run's target window caps the context at ${numCtx} tokens: raise context_length (under profiles:, or llm.context_length) in the config, or give the task in smaller parts.`
            : "The model's trained length is the limit: give the task in smaller parts, or use a model with a longer context."),
        { details: { promptTokens: final.promptEvalCount, numCtx } },
      );
    }
    const prompt = final.promptEvalCount ?? 0;
    const completion = final.evalCount ?? 0;
    return {
      ...think.finish(),
      toolCalls,
      // The native API has no 'tool_calls' reason; derive it the way Ollama's OpenAI layer does.
      // The done line is the native stream's terminator: without a done_reason (an older Ollama)
      // the turn still ended whole — null is for a stream that ended without its terminator.
      finishReason:
        toolCalls.length > 0 && (final.doneReason ?? 'stop') === 'stop'
          ? 'tool_calls'
          : (final.doneReason ?? 'stop'),
      usage: { promptTokens: prompt, completionTokens: completion, totalTokens: prompt + completion },
    };
  }
}

/** Splits a byte stream into non-empty lines. */
async function* ndjsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let newline = buffer.indexOf('\n');
    while (newline >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line !== '') yield line;
      newline = buffer.indexOf('\n');
    }
  }
  const rest = (buffer + decoder.decode()).trim();
  if (rest !== '') yield rest;
}

/** The profile's sampler as Ollama options (SPEC §16); the temperature is set by the caller. */
function ollamaSampling(settings: TurnSettings | undefined): Record<string, number> {
  return {
    ...(settings?.topP === undefined ? {} : { top_p: settings.topP }),
    ...(settings?.topK === undefined ? {} : { top_k: settings.topK }),
    ...(settings?.minP === undefined ? {} : { min_p: settings.minP }),
    ...(settings?.maxOutputTokens === undefined ? {} : { num_predict: settings.maxOutputTokens }),
  };
}

/**
 * Ollama's `think`: a level for models that take levels (gpt-oss takes levels only, `true`
 * meaning medium), else a boolean. Only set for a model known to think (the run decides);
 * `think: true` on one that does not is a 400 (`"…" does not support thinking`).
 */
function ollamaThink(model: string, level: ThinkLevel | undefined): boolean | string | undefined {
  if (level === undefined) return undefined;
  if (/gpt-oss/i.test(model)) return level === 'off' ? 'low' : level;
  return level !== 'off';
}

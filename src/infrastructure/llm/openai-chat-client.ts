import {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from 'openai/core/error';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
} from 'openai/resources/chat/completions';
import type {
  BackendKind,
  ChatClient,
  ChatRequest,
  ChatStreamEvent,
  ChatTurn,
  TurnSettings,
} from '../../application/ports.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { RetryPolicy } from './backoff.ts';
import type { ChatTransport, TransportResponse } from './chat-transport.ts';
import { defaultTransport } from './runtime-transport.ts';
import { classifyFault } from './classify-error.ts';
import { NotAStreamError } from './not-a-stream-error.ts';
import type { RateGate } from './rate-gate.ts';
import { withRetries } from './retry-loop.ts';
import { SseDecoder } from './sse-decoder.ts';
import { StreamAssembler } from './stream-assembler.ts';
import { toOpenAiMessages, toOpenAiTools } from './wire-messages.ts';

export interface OpenAiChatClientOptions {
  readonly backend: BackendKind;
  /** Server root, without `/v1`. */
  readonly baseUrl: string;
  readonly retry: RetryPolicy;
  readonly requestTimeoutMs: number;
  readonly temperature?: number | undefined;
  readonly apiKey?: string | undefined;
  readonly random?: () => number;
  /** How requests travel; default: `node:http` with keep-alive on Node, `fetch` on Deno. */
  readonly transport?: ChatTransport;
  /** A hosted endpoint's limiter: every attempt waits its turn, and a 429's `retry-after` holds it. */
  readonly gate?: RateGate | undefined;
  /**
   * Ask for several calls in one turn (`parallel_tool_calls: true`) whenever tools are offered:
   * llama-server parses only the first call unless asked (its default is false), and vLLM drops
   * every call after the first when told false (research/local-model-quirks-2.md Q27, Q28). The
   * loop runs a turn's calls one after another either way.
   */
  readonly parallelToolCalls?: boolean;
}

/**
 * A `ChatClient` for any OpenAI-compatible `/v1/chat/completions` (LM Studio, Ollama's `/v1`),
 * streaming. It speaks the wire format itself over a small transport and parses the event stream
 * with a small decoder, which costs a fraction of the `openai` package's request path (ADR 0006),
 * but it fails with the `openai` package's error classes, which `classifyFault` reads. It retries
 * transient faults itself — connection errors, 5xx, 429, streams cut short — with exponential
 * backoff and jitter, and never retries a 4xx.
 */
export class OpenAiChatClient implements ChatClient {
  readonly backend: BackendKind;
  readonly #options: OpenAiChatClientOptions;
  readonly #url: string;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #transport: ChatTransport;

  constructor(options: OpenAiChatClientOptions) {
    this.backend = options.backend;
    this.#options = options;
    this.#url = `${options.baseUrl}/v1/chat/completions`;
    this.#headers = {
      'content-type': 'application/json',
      accept: 'text/event-stream',
      // Local servers need no key; one is sent only when configured.
      ...(options.apiKey === undefined ? {} : { authorization: `Bearer ${options.apiKey}` }),
    };
    this.#transport = options.transport ?? defaultTransport;
  }

  get label(): string {
    return `${this.backend} ${this.#options.baseUrl}`;
  }

  async complete(
    request: ChatRequest,
    onEvent: (event: ChatStreamEvent) => void = () => {},
  ): Promise<ChatTurn> {
    const started = Date.now();
    const target = { backendLabel: this.label, baseUrl: this.#options.baseUrl, model: request.model };
    const { value, attempts } = await withRetries({
      label: this.label,
      retry: this.#options.retry,
      random: this.#options.random,
      signal: request.signal,
      onEvent,
      attempt: () => this.#attempt(request, onEvent),
      classify: (error) => {
        const fault = classifyFault(error, target);
        if (fault.transient && fault.waitMs !== undefined) this.#options.gate?.hold(fault.waitMs);
        return fault;
      },
      giveUpHint: `Check that the server is running and has "${request.model}" loaded, then run again.`,
    });
    return { ...value, latencyMs: Date.now() - started, attempts, backend: this.label };
  }

  async #attempt(request: ChatRequest, onEvent: (event: ChatStreamEvent) => void) {
    const params: ChatCompletionCreateParamsStreaming = {
      model: request.model,
      messages: toOpenAiMessages(request.messages),
      // A turn asked without tools (the summarising one) sends none: OpenAI refuses an empty list.
      ...(request.tools.length === 0 ? {} : { tools: toOpenAiTools(request.tools) }),
      ...(request.tools.length > 0 && this.#options.parallelToolCalls === true
        ? { parallel_tool_calls: true }
        : {}),
      stream: true,
      stream_options: { include_usage: true },
      ...samplingParams(request.settings, this.#options.temperature),
    };
    // The request's own controller: the timeout and the caller's signal both abort it.
    const controller = new AbortController();
    const abort = () => controller.abort();
    request.signal.addEventListener('abort', abort, { once: true });
    try {
      await this.#options.gate?.wait(request.signal);
      const response = await this.#send(JSON.stringify(params), request.signal, controller);
      await refuseNonStream(response);
      const assembler = new StreamAssembler();
      await readStream(response, (chunk) => {
        const { text, reasoning, startedCalls } = assembler.push(chunk);
        if (reasoning !== '') onEvent({ type: 'reasoning', text: reasoning });
        if (text !== '') onEvent({ type: 'text', text });
        for (const name of startedCalls) onEvent({ type: 'tool_call_started', name });
      });
      // A stream the server ended with no finish_reason — after [DONE] or not — is a whole
      // answer, not a dead server: a connection that broke mid-stream throws above instead. What
      // it holds is judged as any turn's is (quirks-2 rule 1): calls whose arguments do not parse
      // are not run, and one with nothing in it is the parser error Ollama's /v1 swallows (Q18).
      const result = assembler.result();
      const usage = result.usage ?? { prompt: 0, completion: 0, total: 0 };
      return {
        content: result.content,
        ...(result.reasoning === undefined ? {} : { reasoning: result.reasoning }),
        ...(result.reasoningTokens === undefined ? {} : { reasoningTokens: result.reasoningTokens }),
        toolCalls: result.toolCalls,
        finishReason: result.finishReason,
        usage: {
          promptTokens: usage.prompt,
          completionTokens: usage.completion,
          totalTokens: usage.total,
          ...(result.cachedTokens === undefined ? {} : { cachedTokens: result.cachedTokens }),
          ...(result.prefill === undefined ? {} : { prefill: result.prefill }),
        },
      };
    } finally {
      request.signal.removeEventListener('abort', abort);
    }
  }

  /**
   * Sends the request and waits for the headers, failing as the `openai` package does: a user
   * abort, a timeout (which, as there, covers the wait for the headers, not the stream), a
   * connection error, or an `APIError` for the status with the server's error body.
   */
  async #send(body: string, signal: AbortSignal, controller: AbortController): Promise<TransportResponse> {
    if (signal.aborted) throw new APIUserAbortError();
    const timer = setTimeout(() => controller.abort(), this.#options.requestTimeoutMs);
    let response: TransportResponse;
    try {
      response = await this.#transport(this.#url, {
        body,
        headers: this.#headers,
        signal: controller.signal,
      });
    } catch (error) {
      if (signal.aborted) throw new APIUserAbortError();
      if (controller.signal.aborted) throw new APIConnectionTimeoutError();
      throw new APIConnectionError({
        message: `Connection error: ${errorMessage(error)}`,
        cause: asError(error),
      });
    } finally {
      clearTimeout(timer);
    }
    if (response.status >= 200 && response.status < 300) return response;
    let text = '';
    try {
      for await (const chunk of response.body) text += chunk;
    } catch (error) {
      text = errorMessage(error);
    }
    const json = envelope(parseJson(text));
    throw APIError.generate(response.status, json, json === undefined ? text : undefined, response.headers());
  }
}

/**
 * Reads an OpenAI-style event stream to its end (so the connection can be reused), handing each
 * chunk to `onChunk`. Like the `openai` package: `[DONE]` ends the data, an `error` field in any
 * event is an `APIError` without a status, and data that is not JSON is a broken stream.
 */
async function readStream(response: TransportResponse, onChunk: (chunk: ChatCompletionChunk) => void) {
  const decoder = new SseDecoder();
  let done = false;
  for await (const text of response.body) {
    for (const message of decoder.push(text)) {
      if (done) continue;
      if (message.data.startsWith('[DONE]')) {
        done = true;
        continue;
      }
      const data = JSON.parse(message.data) as (ChatCompletionChunk & { error?: unknown }) | null;
      if (data?.error) throw new APIError(undefined, data.error, undefined, response.headers());
      if (data !== null) onChunk(data);
    }
  }
}

/**
 * A 2xx answer that is plainly not an event stream: a web page or a proxy's login form at the
 * configured URL, or a JSON body (LM Studio answers unknown routes 200 with `{ "error": … }`).
 * Retrying cannot help, so it fails at once with what came back. A stream without a content
 * type is read as a stream.
 */
async function refuseNonStream(response: TransportResponse): Promise<void> {
  const type = response.headers().get('content-type')?.toLowerCase() ?? '';
  if (type === '' || type.includes('text/event-stream')) return;
  let text = '';
  for await (const chunk of response.body) {
    text += chunk;
    if (text.length > 4096) break;
  }
  const json = parseJson(text) as { error?: unknown } | undefined;
  if (json?.error !== undefined) throw new APIError(response.status, json, undefined, response.headers());
  throw new NotAStreamError(response.status, type, text);
}

/**
 * vLLM's error body is flat (`{"object":"error","message":…,"type":"BadRequestError","code":400}`),
 * and the `openai` package reads only an `error` field, so it would report "400 status code (no
 * body)" and lose the server's words; a flat body is put in the envelope it expects.
 */
function envelope(json: unknown): object | undefined {
  if (typeof json !== 'object' || json === null) return undefined;
  const record = json as Record<string, unknown>;
  return record.error === undefined && typeof record.message === 'string' ? { error: record } : record;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

/**
 * The profile's sampler as OpenAI-compatible fields (SPEC §16); `llm.temperature` only for a
 * model no profile sets one for. `top_k` and `min_p` are extensions LM Studio and Ollama's `/v1`
 * read; thinking goes as `reasoning_effort` (a level; `off` is not an effort, so nothing is sent).
 */
function samplingParams(settings: TurnSettings | undefined, fallbackTemperature: number | undefined) {
  const temperature = settings?.temperature ?? fallbackTemperature;
  const think = settings?.think;
  return {
    ...(temperature === undefined ? {} : { temperature }),
    ...(settings?.topP === undefined ? {} : { top_p: settings.topP }),
    ...(settings?.topK === undefined ? {} : { top_k: settings.topK }),
    ...(settings?.minP === undefined ? {} : { min_p: settings.minP }),
    ...(settings?.maxOutputTokens === undefined ? {} : { max_tokens: settings.maxOutputTokens }),
    ...(think === undefined || think === 'off' ? {} : { reasoning_effort: think }),
  };
}

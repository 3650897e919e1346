import OpenAI from 'openai';
import type {
  BackendKind,
  ChatClient,
  ChatRequest,
  ChatStreamEvent,
  ChatTurn,
} from '../../application/ports.ts';
import type { RetryPolicy } from './backoff.ts';
import { classifyFault } from './classify-error.ts';
import { withRetries } from './retry-loop.ts';
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
}

/**
 * A `ChatClient` for any OpenAI-compatible `/v1/chat/completions` (LM Studio, Ollama's `/v1`),
 * streaming, through the `openai` package. It retries transient faults itself — connection errors,
 * 5xx, 429, streams cut short — with exponential backoff and jitter, and never retries a 4xx.
 */
export class OpenAiChatClient implements ChatClient {
  readonly backend: BackendKind;
  readonly #options: OpenAiChatClientOptions;
  readonly #client: OpenAI;

  constructor(options: OpenAiChatClientOptions) {
    this.backend = options.backend;
    this.#options = options;
    this.#client = new OpenAI({
      baseURL: `${options.baseUrl}/v1`,
      // Local servers ignore the key, but the SDK requires one.
      apiKey: options.apiKey ?? 'not-needed',
      maxRetries: 0,
      timeout: options.requestTimeoutMs,
    });
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
      classify: (error) => classifyFault(error, target),
      giveUpHint: `Check that the server is running and has "${request.model}" loaded, then run again.`,
    });
    return { ...value, latencyMs: Date.now() - started, attempts, backend: this.label };
  }

  async #attempt(request: ChatRequest, onEvent: (event: ChatStreamEvent) => void) {
    const stream = await this.#client.chat.completions.create(
      {
        model: request.model,
        messages: toOpenAiMessages(request.messages),
        tools: toOpenAiTools(request.tools),
        stream: true,
        stream_options: { include_usage: true },
        ...(this.#options.temperature === undefined ? {} : { temperature: this.#options.temperature }),
      },
      { signal: request.signal },
    );
    const assembler = new StreamAssembler();
    for await (const chunk of stream) {
      const { text, startedCalls } = assembler.push(chunk);
      if (text !== '') onEvent({ type: 'text', text });
      for (const name of startedCalls) onEvent({ type: 'tool_call_started', name });
    }
    if (!assembler.finished) {
      // A stream that ends with no finish_reason was cut short (Ollama swallows mid-stream errors).
      throw new Error('the stream ended before the model finished (no finish_reason)');
    }
    const result = assembler.result();
    const usage = result.usage ?? { prompt: 0, completion: 0, total: 0 };
    return {
      content: result.content,
      toolCalls: result.toolCalls,
      finishReason: result.finishReason,
      usage: { promptTokens: usage.prompt, completionTokens: usage.completion, totalTokens: usage.total },
    };
  }
}

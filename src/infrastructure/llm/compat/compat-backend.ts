import type {
  BackendKind,
  BackendProbe,
  ChatClient,
  ChatRequest,
  ChatStreamEvent,
  ChatTurn,
  ModelCatalog,
} from '../../../application/ports.ts';
import type { BackendConfig } from '../../../config/schema.ts';
import { FabricError } from '../../../domain/errors.ts';
import { OpenAiChatClient, type OpenAiChatClientOptions } from '../openai-chat-client.ts';
import { RateGate } from '../rate-gate.ts';
import { type CompatProbeTarget, probeKeyed, probeLlamaServer, probeVllm } from './compat-probes.ts';

/** What every backend of `llm.backends` shares: the chat settings and the probe timeout. */
export interface CompatBackendOptions {
  readonly probeTimeoutMs: number;
  readonly chat: Omit<OpenAiChatClientOptions, 'backend' | 'baseUrl' | 'apiKey' | 'gate'>;
}

/**
 * One backend of `llm.backends`: llama-server, vLLM or a keyed OpenAI-compatible endpoint. Each
 * speaks OpenAI's `/v1/chat/completions`, so the chat goes through the one OpenAI-compatible
 * client; what differs is the catalog (`compat-probes.ts`) and, for a keyed endpoint, the key
 * (sent to this URL only, scrubbed from every error) and the limiter.
 */
export class CompatBackend implements ModelCatalog {
  readonly kind: BackendKind;
  readonly name: string;
  readonly baseUrl: string;
  readonly #config: BackendConfig;
  readonly #target: CompatProbeTarget;
  readonly #client: ChatClient;

  constructor(config: BackendConfig, options: CompatBackendOptions) {
    this.kind = config.kind;
    this.name = config.name ?? config.kind;
    this.baseUrl = config.url;
    this.#config = config;
    const apiKey = config.api_key?.reveal();
    this.#target = {
      kind: config.kind,
      name: this.name,
      baseUrl: config.url,
      timeoutMs: options.probeTimeoutMs,
      apiKey,
      apiKeyEnv: config.api_key_env,
      models: config.models,
    };
    const client = new OpenAiChatClient({
      ...options.chat,
      backend: config.kind,
      baseUrl: config.url,
      apiKey,
      gate: new RateGate(config.rate_limit?.requests_per_minute),
      // llama-server and vLLM keep or drop a turn's later calls by this field (quirks-2 Q27, Q28).
      parallelToolCalls: config.kind === 'llama_cpp' || config.kind === 'vllm',
    });
    this.#client = apiKey === undefined ? client : new ScrubbingChatClient(client, apiKey);
  }

  async probe(
    signal?: AbortSignal,
    onProgress?: (message: string) => void,
  ): Promise<readonly BackendProbe[]> {
    switch (this.#config.kind) {
      case 'llama_cpp':
        return [await probeLlamaServer(this.#target, this.#config.load_wait_s * 1000, signal, onProgress)];
      case 'vllm':
        return [await probeVllm(this.#target, signal)];
      case 'openai':
        return [await probeKeyed(this.#target, signal)];
    }
  }

  chatClient(): ChatClient {
    return this.#client;
  }
}

/**
 * Keeps a key out of everything a request can leave behind: an error's message and details, and
 * the reason of a retry (both reach the runlog). Some servers echo part of the key in a 401.
 */
class ScrubbingChatClient implements ChatClient {
  readonly backend: BackendKind;
  readonly #inner: ChatClient;
  readonly #key: string;

  constructor(inner: ChatClient, key: string) {
    this.backend = inner.backend;
    this.#inner = inner;
    this.#key = key;
  }

  async complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> {
    try {
      return await this.#inner.complete(request, (event) =>
        onEvent?.(event.type === 'retry' ? { ...event, reason: this.#scrub(event.reason) } : event),
      );
    } catch (error) {
      if (error instanceof FabricError)
        throw new FabricError(error.code, this.#scrub(error.message), {
          // No cause: the original message may hold the key.
          details: JSON.parse(this.#scrub(JSON.stringify(error.details))) as Record<string, unknown>,
        });
      // Anything else (a cancellation's abort reason, say) passes as it is unless it names the key.
      if (!String(error).includes(this.#key)) throw error;
      throw new Error(this.#scrub(String(error)));
    }
  }

  #scrub(text: string): string {
    return text.split(this.#key).join('[redacted]');
  }
}

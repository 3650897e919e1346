import { loadLmStudioModel, unloadLmStudioModel } from './lmstudio/lmstudio-load.ts';
import type { BackendKind, BackendProbe, ChatClient } from '../../application/ports.ts';
import {
  type ModelChoice,
  type ResolveOptions,
  resolveModel,
  sameModel,
} from '../../application/models/resolve-model.ts';
import type { LlmConfig } from '../../config/schema.ts';
import { CompositeCatalog } from './composite-catalog.ts';
import { HealthBook } from './health-book.ts';
import { LmStudioBackend } from './lmstudio/lmstudio-backend.ts';
import { OllamaCatalog } from './ollama/ollama-catalog.ts';
import { OllamaChatClient } from './ollama/ollama-chat-client.ts';
import { type ChatRoute, RoutingChatClient } from './routing-chat-client.ts';

/**
 * The model backends the config names: LM Studio (its servers pooled) and Ollama. Builds the
 * cached catalog that asks them all, and per run a routing chat client that starts on the chosen
 * model's backend and fails over to another backend that has a suitable model.
 */
export class LlmBackends {
  readonly catalog: CompositeCatalog;
  readonly health: HealthBook;
  readonly #lmStudio: LmStudioBackend | undefined;
  readonly #ollamaUrl: string;
  readonly #loadTimeoutMs: number;
  /** The models this process loaded (`loadAt`), and on which servers: the ones it may unload. */
  readonly #loadedHere = new Map<string, Set<string>>();
  readonly #ollama: OllamaChatClient;
  #probes: readonly BackendProbe[] = [];

  constructor(llm: LlmConfig, options: { health?: HealthBook } = {}) {
    this.health = options.health ?? new HealthBook();
    const chat = {
      retry: {
        maxAttempts: llm.retry.max_attempts,
        baseDelayMs: llm.retry.base_delay_ms,
        maxDelayMs: llm.retry.max_delay_ms,
      },
      requestTimeoutMs: llm.request_timeout_s * 1000,
      temperature: llm.temperature,
    };
    this.#lmStudio =
      llm.lm_studio_urls.length === 0
        ? undefined
        : new LmStudioBackend({
            urls: llm.lm_studio_urls,
            probeTimeoutMs: llm.probe_timeout_ms,
            chat,
            health: this.health,
          });
    this.#ollamaUrl = llm.ollama_url;
    this.#loadTimeoutMs = llm.request_timeout_s * 1000;
    this.#ollama = new OllamaChatClient({
      ...chat,
      baseUrl: llm.ollama_url,
      contextOf: (model) => {
        const found = this.#probes
          .find((m) => m.backend === 'ollama')
          ?.models.find((m) => sameModel(m.id, model));
        return found && { loadedContext: found.contextLength, trainedContext: found.maxContextLength };
      },
    });
    const ollamaCatalog = new OllamaCatalog(llm.ollama_url, llm.probe_timeout_ms);
    this.catalog = new CompositeCatalog([...(this.#lmStudio ? [this.#lmStudio] : []), ollamaCatalog]);
  }

  /**
   * Loads the chosen model at `contextLength` where the backend can (LM Studio's REST API) and
   * returns the window it was loaded at; undefined where it cannot (Ollama sizes its window per
   * request, an older LM Studio loads on the first request).
   */
  async loadAt(
    choice: ModelChoice,
    contextLength: number,
    signal?: AbortSignal,
  ): Promise<number | undefined> {
    if (choice.model.backend !== 'lm_studio') return undefined;
    const loaded = await loadLmStudioModel(
      choice.model.baseUrl,
      choice.model.id,
      contextLength,
      this.#loadTimeoutMs,
      signal,
    );
    // What the servers have changed: the next run asks them again.
    if (loaded !== undefined) {
      this.catalog.invalidate();
      const servers = this.#loadedHere.get(choice.model.id) ?? new Set<string>();
      servers.add(choice.model.baseUrl);
      this.#loadedHere.set(choice.model.id, servers);
    }
    return loaded;
  }

  /**
   * Unloads `model` from the servers this process loaded it on (`loadAt`), never one a person
   * loaded; the servers it was unloaded from.
   */
  async unloadLoaded(model: string): Promise<string[]> {
    const servers = this.#loadedHere.get(model);
    if (servers === undefined) return [];
    this.#loadedHere.delete(model);
    const unloaded: string[] = [];
    for (const baseUrl of servers) {
      if (await unloadLmStudioModel(baseUrl, model, this.#loadTimeoutMs)) unloaded.push(baseUrl);
    }
    if (unloaded.length > 0) this.catalog.invalidate();
    return unloaded;
  }

  /**
   * A chat client for a run: the chosen model's backend first, then every other backend on which
   * the same resolution rules find a model (for `--model`, only the same model).
   */
  async chatClientFor(
    choice: ModelChoice,
    resolve: ResolveOptions,
    signal?: AbortSignal,
  ): Promise<ChatClient> {
    this.#probes = await this.catalog.probe(signal);
    const kinds: BackendKind[] =
      choice.model.backend === 'lm_studio' ? ['lm_studio', 'ollama'] : ['ollama', 'lm_studio'];
    const routes = kinds.flatMap((kind): ChatRoute[] => {
      const client = kind === 'lm_studio' ? this.#lmStudio?.chatClient() : this.#ollama;
      if (client === undefined) return [];
      const key = kind === 'lm_studio' ? 'lm_studio' : `ollama ${this.#ollamaUrl}`;
      if (kind === choice.model.backend) return [{ key, client, model: choice.model.id }];
      try {
        const other = resolveModel(
          this.#probes.filter((probe) => probe.backend === kind),
          resolve,
        );
        return [{ key, client, model: other.model.id }];
      } catch {
        return []; // that backend has nothing suitable
      }
    });
    // A backend that failed a request is asked again on the next run only after a fresh probe.
    return new RoutingChatClient(routes, this.health, () => this.catalog.invalidate());
  }
}

import type { LoadResult } from '../../application/models/run-window.ts';
import { loadLmStudioModel, unloadLmStudioModel } from './lmstudio/lmstudio-load.ts';
import type { BackendProbe, CatalogModel, ChatClient, ModelCatalog } from '../../application/ports.ts';
import {
  type ModelChoice,
  type ResolveOptions,
  resolveModel,
  sameModel,
} from '../../application/models/resolve-model.ts';
import type { LlmConfig } from '../../config/schema.ts';
import { CompatBackend } from './compat/compat-backend.ts';
import { CompositeCatalog } from './composite-catalog.ts';
import { HealthBook } from './health-book.ts';
import { LmStudioBackend } from './lmstudio/lmstudio-backend.ts';
import { OllamaCatalog } from './ollama/ollama-catalog.ts';
import { OllamaChatClient } from './ollama/ollama-chat-client.ts';
import { type ChatRoute, RoutingChatClient } from './routing-chat-client.ts';
import { SlottedChatClient } from './slots/slotted-chat-client.ts';

/** One backend as the router sees it: its health key, its client, and which probes are its own. */
interface Source {
  readonly key: string;
  readonly client: ChatClient;
  /** A pooled backend's client sending a run to `url` first (LM Studio's servers). */
  readonly preferring?: (url: string) => ChatClient;
  readonly owns: (probe: BackendProbe) => boolean;
}

/**
 * The model backends the config names: LM Studio (its servers pooled), Ollama, and each of
 * `llm.backends` (llama-server, vLLM, keyed OpenAI-compatible endpoints). Builds the cached
 * catalog that asks them all, and per run a routing chat client that starts on the chosen
 * model's backend and fails over to another backend that has a suitable model.
 */
export class LlmBackends {
  readonly catalog: CompositeCatalog;
  readonly health: HealthBook;
  readonly #loadTimeoutMs: number;
  readonly #sources: readonly Source[];
  /** The models this process loaded (`loadAt`), and on which servers: the ones it may unload. */
  readonly #loadedHere = new Map<string, Set<string>>();
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
    const lmStudio =
      llm.lm_studio_urls.length === 0
        ? undefined
        : new LmStudioBackend({
            urls: llm.lm_studio_urls,
            probeTimeoutMs: llm.probe_timeout_ms,
            chat,
            health: this.health,
          });
    this.#loadTimeoutMs = llm.request_timeout_s * 1000;
    const ollama = new OllamaChatClient({
      ...chat,
      baseUrl: llm.ollama_url,
      contextOf: (model) => {
        const found = this.#probes
          .find((m) => m.backend === 'ollama')
          ?.models.find((m) => sameModel(m.id, model));
        return found && { loadedContext: found.contextLength, trainedContext: found.maxContextLength };
      },
    });
    const listed = llm.backends.map(
      (backend) => new CompatBackend(backend, { probeTimeoutMs: llm.probe_timeout_ms, chat }),
    );
    this.#sources = [
      ...(lmStudio === undefined
        ? []
        : [
            {
              key: 'lm_studio',
              client: lmStudio.chatClient(),
              preferring: (url: string) => lmStudio.chatClient().preferring(url),
              owns: (p: BackendProbe) => p.backend === 'lm_studio',
            },
          ]),
      {
        key: `ollama ${llm.ollama_url}`,
        // Ollama does not report its OLLAMA_NUM_PARALLEL: the config says it, or no scheduling.
        client: new SlottedChatClient(ollama, () => llm.ollama_parallel),
        owns: (p) => p.backend === 'ollama',
      },
      ...listed.map((backend, index) => {
        const owns = (p: BackendProbe) => p.backend === backend.kind && p.baseUrl === backend.baseUrl;
        // The slots the entry's config says, else the server's own (llama-server's total_slots).
        const slotsOf = (model: string) =>
          llm.backends[index]?.parallel ??
          this.#probes
            .filter(owns)
            .flatMap((p) => p.models)
            .find((m) => sameModel(m.id, model))?.parallel;
        return {
          key: `${backend.kind} ${backend.baseUrl}`,
          client: new SlottedChatClient(backend.chatClient(), slotsOf),
          owns,
        };
      }),
    ];
    const catalogs: ModelCatalog[] = [
      ...(lmStudio ? [lmStudio] : []),
      new OllamaCatalog(llm.ollama_url, llm.probe_timeout_ms),
      ...listed,
    ];
    this.catalog = new CompositeCatalog(catalogs);
  }

  /**
   * Loads the chosen model at `contextLength` where the backend can (LM Studio's REST API) and
   * returns the window it was loaded at (or why it was not); undefined where it cannot (Ollama sizes its window per
   * request, an older LM Studio loads on the first request, llama-server and vLLM run at the
   * window they were started with).
   */
  async loadAt(
    choice: ModelChoice,
    contextLength: number,
    signal?: AbortSignal,
  ): Promise<LoadResult | undefined> {
    if (choice.model.backend !== 'lm_studio') return undefined;
    const loaded = await loadLmStudioModel(
      choice.model.baseUrl,
      choice.model.id,
      contextLength,
      this.#loadTimeoutMs,
      signal,
    );
    // What the servers have changed: the next run asks them again.
    if ('window' in loaded) {
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

  /** The client of the backend that lists this model, alone (no failover): what a probe measures (SPEC §20). */
  async clientFor(model: CatalogModel, signal?: AbortSignal): Promise<ChatClient | undefined> {
    this.#probes = await this.catalog.probe(signal);
    const owner = { backend: model.backend, baseUrl: model.baseUrl } as BackendProbe;
    return this.#sources.find((source) => source.owns(owner))?.client;
  }

  /**
   * A chat client for a run: the chosen model's backend first, then every other backend on which
   * the same resolution rules find a model (for `--model`, only the same model; never a hosted
   * one that was not named).
   */
  async chatClientFor(
    choice: ModelChoice,
    resolve: ResolveOptions,
    signal?: AbortSignal,
  ): Promise<ChatClient> {
    this.#probes = await this.catalog.probe(signal);
    const chosenProbe = { backend: choice.model.backend, baseUrl: choice.model.baseUrl } as BackendProbe;
    const chosen = this.#sources.find((source) => source.owns(chosenProbe));
    const others = this.#sources.filter((source) => source !== chosen);
    // A resumed run kept on its server (SPEC §18): LM Studio's pool is told to send it there.
    const kept =
      resolve.previous?.server === `${choice.model.backend} ${choice.model.baseUrl}`
        ? chosen?.preferring?.(choice.model.baseUrl)
        : undefined;
    const routes: ChatRoute[] =
      chosen === undefined
        ? []
        : [{ key: chosen.key, client: kept ?? chosen.client, model: choice.model.id }];
    for (const source of others) {
      try {
        const other = resolveModel(this.#probes.filter(source.owns), resolve);
        routes.push({ key: source.key, client: source.client, model: other.model.id });
      } catch {
        // that backend has nothing suitable
      }
    }
    // A backend that failed a request is asked again on the next run only after a fresh probe.
    return new RoutingChatClient(routes, this.health, () => this.catalog.invalidate());
  }
}

import type { BackendProbe, ChatClient, ModelCatalog } from '../../../application/ports.ts';
import type { HealthBook } from '../health-book.ts';
import { type LmStudioClientOptions, LmStudioChatClient } from './lmstudio-chat-client.ts';
import { probeLmStudio } from './lmstudio-probe.ts';
import { ServerPool } from './server-pool.ts';

/** What the LM Studio adapter needs: its servers, a probe timeout, the chat settings. */
export interface LmStudioBackendOptions {
  readonly urls: readonly string[];
  readonly probeTimeoutMs: number;
  readonly chat: LmStudioClientOptions;
  readonly health: HealthBook;
}

/**
 * LM Studio, one or more servers. Its catalog asks every server concurrently and tells the private
 * server pool what each has; its chat client dispatches through that pool.
 */
export class LmStudioBackend implements ModelCatalog {
  readonly #options: LmStudioBackendOptions;
  readonly #pool: ServerPool;
  #client: LmStudioChatClient | undefined;

  constructor(options: LmStudioBackendOptions) {
    this.#options = options;
    this.#pool = new ServerPool(options.urls, options.health);
  }

  async probe(signal?: AbortSignal): Promise<readonly BackendProbe[]> {
    const probes = await Promise.all(
      this.#options.urls.map((url) => probeLmStudio(url, this.#options.probeTimeoutMs, signal)),
    );
    for (const probe of probes) this.#pool.update(probe);
    return probes;
  }

  /** The one chat client for every LM Studio server. */
  chatClient(): ChatClient {
    this.#client ??= new LmStudioChatClient(this.#pool, this.#options.chat);
    return this.#client;
  }
}

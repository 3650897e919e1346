import type { BackendProbe, ModelCatalog } from '../../../application/ports.ts';
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
  /**
   * How old what the pool knows of the servers (which model is loaded where) may get while
   * requests flow before it is re-read in the background. Default 5 s.
   */
  readonly refreshAfterMs?: number;
}

/**
 * LM Studio, one or more servers. Its catalog asks every server concurrently and tells the private
 * server pool what each has; its chat client dispatches through that pool.
 */
export class LmStudioBackend implements ModelCatalog {
  readonly #options: LmStudioBackendOptions;
  readonly #pool: ServerPool;
  #client: LmStudioChatClient | undefined;
  #probedAt = Number.NEGATIVE_INFINITY;
  #refreshing: Promise<unknown> | undefined;

  constructor(options: LmStudioBackendOptions) {
    this.#options = options;
    this.#pool = new ServerPool(options.urls, options.health);
  }

  async probe(signal?: AbortSignal): Promise<readonly BackendProbe[]> {
    const probes = await Promise.all(
      this.#options.urls.map((url) => probeLmStudio(url, this.#options.probeTimeoutMs, signal)),
    );
    for (const probe of probes) this.#pool.update(probe);
    this.#probedAt = Date.now();
    return probes;
  }

  /** The one chat client for every LM Studio server. */
  chatClient(): LmStudioChatClient {
    this.#client ??= new LmStudioChatClient(this.#pool, this.#options.chat, () => this.#refresh());
    return this.#client;
  }

  /**
   * Re-reads the servers in the background when what the pool knows is older than
   * `refreshAfterMs`: a model loaded or unloaded while a battery runs moves its requests
   * (prompt-prix ADR-006). The request that notices goes by what is known now.
   */
  #refresh(): void {
    if (this.#refreshing !== undefined) return;
    if (Date.now() - this.#probedAt < (this.#options.refreshAfterMs ?? 5000)) return;
    this.#refreshing = this.probe()
      .catch(() => {})
      .finally(() => {
        this.#refreshing = undefined;
      });
  }
}

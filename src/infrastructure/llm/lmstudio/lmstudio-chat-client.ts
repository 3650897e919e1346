import type { ChatClient, ChatRequest, ChatStreamEvent, ChatTurn } from '../../../application/ports.ts';
import { FabricError } from '../../../domain/errors.ts';
import { OpenAiChatClient, type OpenAiChatClientOptions } from '../openai-chat-client.ts';
import type { ServerPool } from './server-pool.ts';
import { prefillOf, promptTokens } from '../slots/slot-tickets.ts';

/** What every LM Studio server's client shares. */
export type LmStudioClientOptions = Omit<OpenAiChatClientOptions, 'backend' | 'baseUrl'>;

/**
 * The LM Studio dispatcher: sends each request to a healthy server that has the model loaded,
 * else one that lists it, the least busy first. A server that stays unreachable after its client's own retries is marked down and
 * the request moves to the next server; when none is left it throws `backend_unavailable`.
 */
export class LmStudioChatClient implements ChatClient {
  readonly backend = 'lm_studio' as const;
  readonly #pool: ServerPool;
  readonly #clients = new Map<string, OpenAiChatClient>();
  readonly #refresh: () => void;
  /** The server each run's last request went to (a run stays on it: its prompt cache), newest last. */
  readonly #sticky = new Map<string, string>();

  /** `refresh`: asks the adapter to re-read what the servers have when it is getting old. */
  constructor(pool: ServerPool, options: LmStudioClientOptions, refresh: () => void = () => {}) {
    this.#pool = pool;
    this.#refresh = refresh;
    for (const url of pool.urls) {
      this.#clients.set(url, new OpenAiChatClient({ ...options, backend: 'lm_studio', baseUrl: url }));
    }
  }

  complete(request: ChatRequest, onEvent?: (event: ChatStreamEvent) => void): Promise<ChatTurn> {
    return this.#complete(request, onEvent, undefined);
  }

  /**
   * The same dispatcher with `url` first for a run not yet on a server here, while `url` is up and
   * has the model: a resumed run goes on on the server it was on, where its prompt cache is (SPEC §18).
   */
  preferring(url: string): ChatClient {
    return {
      backend: this.backend,
      complete: (request, onEvent) => this.#complete(request, onEvent, url),
    };
  }

  async #complete(
    request: ChatRequest,
    onEvent: ((event: ChatStreamEvent) => void) | undefined,
    preferred: string | undefined,
  ): Promise<ChatTurn> {
    this.#refresh();
    const order = this.#stay(request, this.#pool.order(request.model), preferred);
    const failures: string[] = [];
    let last: FabricError | undefined;
    for (const url of order) {
      const client = this.#clients.get(url);
      if (!client) continue;
      const release = await this.#pool.acquire(url, {
        model: request.model,
        run: request.affinity,
        tokens: promptTokens(request),
        signal: request.signal,
      });
      const sent = Date.now();
      let firstEventAt: number | undefined;
      try {
        const turn = await client.complete(request, (event) => {
          if (firstEventAt === undefined && event.type !== 'retry') firstEventAt = Date.now();
          onEvent?.(event);
        });
        this.#pool.markUp(url);
        this.#remember(request.affinity, url);
        // A turn that asked for tools comes back once they ran: its slot is held for it meanwhile.
        release({
          continues: turn.toolCalls.length > 0,
          prefill: prefillOf(turn, (firstEventAt ?? Date.now()) - sent),
        });
        return turn;
      } catch (error) {
        if (!(error instanceof FabricError) || error.code !== 'backend_unavailable') throw error;
        this.#pool.markDown(url, error.message);
        failures.push(`${url}: ${error.message}`);
        last = error;
      } finally {
        release();
      }
    }
    const tried = order.length === 0 ? `no LM Studio server has "${request.model}"` : failures.join('\n  ');
    throw new FabricError('backend_unavailable', `No LM Studio server could answer:\n  ${tried}`, {
      cause: last,
      details: { servers: order },
    });
  }

  /** The run's server (else `preferred`) first, while it is up and has the model (SPEC §17); else the pool's order. */
  #stay(request: ChatRequest, order: string[], preferred: string | undefined): string[] {
    const url =
      (request.affinity === undefined ? undefined : this.#sticky.get(request.affinity)) ?? preferred;
    if (url === undefined || !order.includes(url) || this.#pool.isDown(url)) return order;
    return [url, ...order.filter((other) => other !== url)];
  }

  #remember(key: string | undefined, url: string): void {
    if (key === undefined) return;
    this.#sticky.delete(key);
    this.#sticky.set(key, url);
    // Runs end without saying so here: the oldest keys go once there are many.
    if (this.#sticky.size > STICKY_RUNS) this.#sticky.delete(this.#sticky.keys().next().value as string);
  }
}

/** How many runs' servers are remembered. */
const STICKY_RUNS = 4096;

import type { BackendProbe } from '../../../application/ports.ts';
import { sameModel } from '../../../application/models/resolve-model.ts';
import type { HealthBook } from '../health-book.ts';

interface ServerState {
  readonly url: string;
  /** Model ids from the last successful probe; undefined until one answered. */
  models: readonly string[] | undefined;
  /** Of those, the ids the server has loaded (prompt-prix ADR-006: send a model where it is loaded). */
  loaded: readonly string[];
  inFlight: number;
}

/**
 * The LM Studio servers, what each has and how busy each is. Private to the LM Studio adapter:
 * orchestration sees one backend and only caps concurrency (SPEC §2).
 */
export class ServerPool {
  readonly #servers: ServerState[];
  readonly #health: HealthBook;
  #turn = 0;

  constructor(urls: readonly string[], health: HealthBook) {
    this.#servers = urls.map((url) => ({ url, models: undefined, loaded: [], inFlight: 0 }));
    this.#health = health;
  }

  get urls(): readonly string[] {
    return this.#servers.map((server) => server.url);
  }

  /** Records a probe: what the server has, and whether it answered. */
  update(probe: BackendProbe): void {
    const server = this.#servers.find((s) => s.url === probe.baseUrl);
    if (!server) return;
    if (probe.ok) {
      server.models = probe.models.map((model) => model.id);
      server.loaded = probe.models.filter((model) => model.loaded === true).map((model) => model.id);
      this.#health.markUp(ServerPool.key(server.url));
    } else {
      this.#health.markDown(ServerPool.key(server.url), probe.error ?? 'probe failed');
    }
  }

  /**
   * The servers to try for a model, best first: healthy ones that have it loaded, then healthy
   * ones that list it (LM Studio loads it on demand); within each, the fewest requests in flight
   * first (ties taken in turn, so runs spread); then the ones marked down, as a last resort.
   * Loading a model is slow and may evict another, so a loaded copy wins even when busier.
   */
  order(model: string): string[] {
    const having = this.#servers.filter(
      (server) => server.models === undefined || server.models.some((id) => sameModel(id, model)),
    );
    const start = this.#turn++;
    const rotated = having.map((_, i) => having[(i + start) % having.length]!);
    const isLoaded = (server: ServerState) => server.loaded.some((id) => sameModel(id, model));
    const byLoad = (servers: ServerState[]) => servers.sort((a, b) => a.inFlight - b.inFlight);
    const ranked = [...byLoad(rotated.filter(isLoaded)), ...byLoad(rotated.filter((s) => !isLoaded(s)))];
    return this.#health.order(ranked, (server) => ServerPool.key(server.url)).map((server) => server.url);
  }

  acquire(url: string): () => void {
    const server = this.#servers.find((s) => s.url === url);
    if (server) server.inFlight += 1;
    let released = false;
    return () => {
      if (server && !released) server.inFlight -= 1;
      released = true;
    };
  }

  markDown(url: string, reason: string): void {
    this.#health.markDown(ServerPool.key(url), reason);
  }

  markUp(url: string): void {
    this.#health.markUp(ServerPool.key(url));
  }

  isDown(url: string): boolean {
    return this.#health.isDown(ServerPool.key(url));
  }

  static key(url: string): string {
    return `lm_studio ${url}`;
  }
}

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
  /** Per loaded model: how many requests it serves at once (`config.parallel`), from the last probe. */
  parallel: ReadonlyMap<string, number>;
  /** Per model: requests being answered, and those waiting for a slot, first come first served. */
  busy: Map<string, number>;
  waiting: Map<string, (() => void)[]>;
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
    this.#servers = urls.map((url) => ({
      url,
      models: undefined,
      loaded: [],
      inFlight: 0,
      parallel: new Map(),
      busy: new Map(),
      waiting: new Map(),
    }));
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
      server.parallel = new Map(
        probe.models.flatMap((model) =>
          model.parallel === undefined ? [] : [[model.id, model.parallel] as const],
        ),
      );
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

  /**
   * Takes one of the server's slots for the model (SPEC §17): a server is not sent more requests
   * for a model at once than it serves in parallel (`config.parallel`); past that a request waits
   * for a slot, first come first served, rather than queue inside the server and push out a
   * cached prompt. Unknown parallelism: no limit. Aborting the signal stops the wait.
   */
  async acquire(url: string, model?: string, signal?: AbortSignal): Promise<() => void> {
    const server = this.#servers.find((s) => s.url === url);
    if (server === undefined) return () => {};
    const key =
      model === undefined ? undefined : [...server.parallel.keys()].find((id) => sameModel(id, model));
    const slots = key === undefined ? undefined : server.parallel.get(key);
    if (key !== undefined && slots !== undefined && (server.busy.get(key) ?? 0) >= slots) {
      // The request that ends hands its slot over: the count stays as it is.
      await waitForSlot(server, key, signal);
    } else if (key !== undefined) server.busy.set(key, (server.busy.get(key) ?? 0) + 1);
    server.inFlight += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      server.inFlight -= 1;
      if (key === undefined) return;
      const next = server.waiting.get(key)?.shift();
      if (next !== undefined) next();
      else server.busy.set(key, (server.busy.get(key) ?? 1) - 1);
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

/** Waits until a request for `key` on `server` ends (its release hands the slot on). */
function waitForSlot(server: ServerState, key: string, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const queue = server.waiting.get(key) ?? [];
    server.waiting.set(key, queue);
    const onAbort = () => {
      const at = queue.indexOf(wake);
      if (at >= 0) queue.splice(at, 1);
      reject(signal?.reason);
    };
    const wake = () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    };
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    queue.push(wake);
  });
}

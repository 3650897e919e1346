import type { BackendProbe } from '../../../application/ports.ts';
import { sameModel } from '../../../application/models/resolve-model.ts';
import type { HealthBook } from '../health-book.ts';
import { type Prefill, SlotScheduler } from '../slots/slot-scheduler.ts';
import { RunRanks } from '../slots/slot-tickets.ts';

interface ServerState {
  readonly url: string;
  /** Model ids from the last successful probe; undefined until one answered. */
  models: readonly string[] | undefined;
  /** Of those, the ids the server has loaded (prompt-prix ADR-006: send a model where it is loaded). */
  loaded: readonly string[];
  inFlight: number;
  /** Per loaded model: how many requests it serves at once (`config.parallel`), from the last probe. */
  parallel: ReadonlyMap<string, number>;
  /** Per model with known parallelism: its slots (../slots/slot-scheduler.ts). */
  slots: Map<string, SlotScheduler>;
}

/** A request asking the pool for a slot. */
export interface SlotRequest {
  readonly model: string;
  /** The run (the request's affinity key). */
  readonly run: string | undefined;
  /** The request's prompt, in tokens (estimated). */
  readonly tokens: number;
  readonly signal?: AbortSignal | undefined;
}

/** How a request ended: whether its run comes back, and its prefill when measured. */
export interface SlotOutcome {
  readonly continues: boolean;
  readonly prefill?: Prefill | undefined;
}

/**
 * The LM Studio servers, what each has and how busy each is. Private to the LM Studio adapter:
 * orchestration sees one backend and only caps concurrency (SPEC §2).
 */
export class ServerPool {
  readonly #servers: ServerState[];
  readonly #health: HealthBook;
  #turn = 0;
  /** Each run's place in start order, for the slots' queues. */
  readonly #ranks = new RunRanks();

  constructor(urls: readonly string[], health: HealthBook) {
    this.#servers = urls.map((url) => ({
      url,
      models: undefined,
      loaded: [],
      inFlight: 0,
      parallel: new Map(),
      slots: new Map(),
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
      for (const [id, parallel] of server.parallel) {
        const slots = server.slots.get(id);
        if (slots === undefined) server.slots.set(id, new SlotScheduler(parallel));
        else slots.resize(parallel);
      }
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
   * for a slot rather than queue inside the server and push out a cached prompt. The slots are
   * scheduled by ../slots/slot-scheduler.ts: runs in start order, a slot held for its run while the run's
   * tool executes. Unknown parallelism: no limit. Aborting the signal stops the wait.
   */
  async acquire(url: string, request: SlotRequest): Promise<(outcome?: SlotOutcome) => void> {
    const server = this.#servers.find((s) => s.url === url);
    if (server === undefined) return () => {};
    const key = [...server.slots.keys()].find((id) => sameModel(id, request.model));
    const slots = key === undefined ? undefined : server.slots.get(key);
    const ticket = {
      run: request.run,
      rank: this.#ranks.of(request.run),
      tokens: request.tokens,
      signal: request.signal,
    };
    // Counted at once, so the next request's order() sees this one (even while it waits for a slot).
    server.inFlight += 1;
    if (slots !== undefined) {
      try {
        await slots.acquire(ticket);
      } catch (error) {
        server.inFlight -= 1;
        throw error;
      }
    }
    let released = false;
    return (outcome) => {
      if (released) return;
      released = true;
      server.inFlight -= 1;
      slots?.release(ticket, outcome?.continues ?? false, outcome?.prefill);
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

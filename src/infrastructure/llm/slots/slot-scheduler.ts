/**
 * One model's slots on one server (issue 38). A slot keeps the prompt it last served; a request
 * from another run evicts it. So when a run's request ends and the run will come back (it asked
 * for tools), its slot is held for it while the tool runs: its next request takes the slot at
 * once and prefills only what is new. Handing the slot over costs the held run its whole prompt
 * prefilled again when it comes back (the waiter's prefill is cold either way), so the hold lasts
 * at most a cold prefill of the larger of the held run's prompt and the first waiter's, at the
 * server's prefill speed: the speed the server reports (llama-server's `timings`) where it does,
 * else the time to the first streamed event. Then the slot goes to the first waiter. Waiting
 * requests are served in their runs' start order, and a slot is never held for a run against an
 * earlier one (SPEC §10: earlier runs finish first). A server that keeps evicted prefixes itself
 * (llama-server's `--cache-ram`) says so after a hand-over: the run that lost its slot comes back
 * and the server's `cache_n` counts what it restored. The hold is then sized on what a hand-over
 * really makes the server prefill again: the cold prefill times the recent share of the prefix lost.
 */

/** A request asking for a slot. */
export interface SlotTicket {
  /** The run (its affinity key); undefined: a request with no run, never held for. */
  readonly run: string | undefined;
  /** The run's place in start order: lower started earlier. */
  readonly rank: number;
  /** The request's prompt, in tokens (estimated). */
  readonly tokens: number;
  readonly signal?: AbortSignal | undefined;
}

interface Waiter {
  readonly ticket: SlotTicket;
  readonly wake: () => void;
}

interface Hold {
  readonly rank: number;
  /** The held run's last prompt, in tokens: what handing the slot over makes it prefill again. */
  readonly tokens: number;
  /** The same prompt as the server counted it (`cache_n` + `prompt_n`), where it reports them. */
  readonly counted: number | undefined;
  readonly since: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** How many prefill samples the speed is taken over. */
const SAMPLES = 16;
/** A shorter prompt's time to first token is mostly the request's own overhead, not prefill. */
const MIN_SAMPLE_TOKENS = 256;
/** A server's own prefill time is prefill alone, but a few tokens' worth is mostly rounding. */
const MIN_REPORTED_TOKENS = 16;

/** A request's prefill: its uncached prompt tokens and their ms; `reported`: the server's own figure. */
export interface Prefill {
  readonly tokens: number;
  readonly ms: number;
  readonly reported?: boolean | undefined;
  /** Prompt tokens the server served from its caches (llama-server `timings.cache_n`), with `reported`. */
  readonly cached?: number | undefined;
}

export class SlotScheduler {
  #capacity: number;
  /** Slots taken: by a request being answered, or held for a run. */
  #taken = 0;
  readonly #waiting: Waiter[] = [];
  readonly #holds = new Map<string, Hold>();
  /** Recent prefill speeds, prompt tokens per ms: the server's own figures, and timed ones. */
  readonly #reported: number[] = [];
  readonly #timed: number[] = [];
  /** Runs whose held slot was handed over, with their prompt then as the server counted it. */
  readonly #handedOver = new Map<string, number>();
  /** Recent shares of a handed-over run's prefix the server prefilled again (0: all restored). */
  readonly #misses: number[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  /** The slots the server now reports (a probe); more slots serve waiters at once. */
  resize(capacity: number): void {
    this.#capacity = capacity;
    this.#serve();
  }

  /** Resolves once the request has a slot; a request whose run holds one takes it at once. */
  acquire(ticket: SlotTicket): Promise<void> {
    const held = ticket.run === undefined ? undefined : this.#holds.get(ticket.run);
    if (held !== undefined && ticket.run !== undefined) {
      clearTimeout(held.timer);
      this.#holds.delete(ticket.run);
      return Promise.resolve();
    }
    if (this.#taken < this.#capacity && this.#waiting.length === 0) {
      this.#taken += 1;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const signal = ticket.signal;
      const onAbort = () => {
        const at = this.#waiting.indexOf(waiter);
        if (at >= 0) this.#waiting.splice(at, 1);
        this.#review();
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        ticket,
        wake: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      if (signal?.aborted) {
        reject(signal.reason);
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      // In start order; requests of the same run keep their arrival order.
      const at = this.#waiting.findIndex((w) => w.ticket.rank > ticket.rank);
      this.#waiting.splice(at < 0 ? this.#waiting.length : at, 0, waiter);
      this.#serve();
      this.#review();
    });
  }

  /**
   * Ends a request. `continues`: its run will send another (it asked for tools), so the slot is
   * held for it. `prefill`: the request's uncached prompt tokens and their ms, as the server
   * reported them or as timed to the first streamed event.
   */
  release(ticket: SlotTicket, continues: boolean, prefill?: Prefill): void {
    if (prefill !== undefined && prefill.ms > 0) {
      const samples = prefill.reported === true ? this.#reported : this.#timed;
      if (prefill.tokens >= (prefill.reported === true ? MIN_REPORTED_TOKENS : MIN_SAMPLE_TOKENS)) {
        samples.push(prefill.tokens / prefill.ms);
        if (samples.length > SAMPLES) samples.shift();
      }
    }
    if (ticket.run !== undefined) this.#learnMiss(ticket, prefill);
    if (continues && ticket.run !== undefined && !this.#holds.has(ticket.run)) {
      const counted =
        prefill?.reported === true && prefill.cached !== undefined
          ? prefill.cached + prefill.tokens
          : undefined;
      const hold = { rank: ticket.rank, tokens: ticket.tokens, counted, since: Date.now(), timer: undefined };
      this.#holds.set(ticket.run, hold);
      this.#review();
      return;
    }
    this.#taken -= 1;
    this.#serve();
  }

  /** Hands free slots to waiters, first in start order first. */
  #serve(): void {
    while (this.#taken < this.#capacity && this.#waiting.length > 0) {
      this.#taken += 1;
      this.#waiting.shift()?.wake();
    }
  }

  /** Weighs every held slot against the first waiter: hand it over now, or at the hold's deadline. */
  #review(): void {
    const first = this.#waiting[0];
    for (const [run, hold] of this.#holds) {
      clearTimeout(hold.timer);
      hold.timer = undefined;
      if (first === undefined) continue;
      const lost = Math.max(first.ticket.tokens, hold.tokens) * this.#missShare();
      const deadline = hold.since + this.#coldPrefillMs(lost);
      if (first.ticket.rank < hold.rank || deadline <= Date.now()) {
        this.#handOver(run);
        this.#review();
        return;
      }
      hold.timer = setTimeout(() => {
        this.#handOver(run);
        this.#review();
      }, deadline - Date.now());
      hold.timer.unref?.();
    }
  }

  /** The held slot goes to the first waiter (or is freed when none is left). */
  #handOver(run: string): void {
    const hold = this.#holds.get(run);
    if (hold === undefined) return;
    clearTimeout(hold.timer);
    this.#holds.delete(run);
    const next = this.#waiting.shift();
    if (next === undefined) {
      this.#taken -= 1;
      return;
    }
    if (hold.counted !== undefined) this.#handedOver.set(run, hold.counted);
    if (this.#handedOver.size > SAMPLES * 64)
      this.#handedOver.delete(this.#handedOver.keys().next().value as string);
    next.wake();
  }

  /**
   * A run whose slot was handed over is back: the server's own counts say how much of the prompt it
   * held then came back from the server's caches (`cache_n` against that prompt's `cache_n` +
   * `prompt_n`). A few tokens evaluated again are rounding (llama-server always evaluates the last).
   */
  #learnMiss(ticket: SlotTicket, prefill: Prefill | undefined): void {
    const held = ticket.run === undefined ? undefined : this.#handedOver.get(ticket.run);
    if (held === undefined || ticket.run === undefined) return;
    this.#handedOver.delete(ticket.run);
    if (prefill?.reported !== true || prefill.cached === undefined || held <= 0) return;
    const lost = held - prefill.cached;
    this.#misses.push(lost < MIN_REPORTED_TOKENS ? 0 : Math.min(1, lost / held));
    if (this.#misses.length > SAMPLES) this.#misses.shift();
  }

  /** The share of a held prompt a hand-over makes the server prefill again: recent figures, else all of it. */
  #missShare(): number {
    if (this.#misses.length === 0) return 1;
    return this.#misses.reduce((sum, m) => sum + m, 0) / this.#misses.length;
  }

  /**
   * What prefilling `tokens` cold would cost, from the slowest recent prefill (a timed request
   * that was mostly cached looks faster than the GPU is), the server's own figures first (they
   * do not move with this machine's load); 0 until a prefill was measured: no hold.
   */
  #coldPrefillMs(tokens: number): number {
    const speeds = this.#reported.length > 0 ? this.#reported : this.#timed;
    if (speeds.length === 0) return 0;
    return tokens / Math.min(...speeds);
  }
}

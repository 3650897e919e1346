import type { ChatRequest, ChatTurn } from '../../../application/ports.ts';
import type { Prefill } from './slot-scheduler.ts';

/** Each run's place in start order (its first request seen), for the slots' queues. */
export class RunRanks {
  readonly #ranks = new Map<string, number>();
  #next = 0;

  /** A run's place in start order; a request with no run goes after every run seen so far. */
  of(run: string | undefined): number {
    if (run === undefined) return this.#next++;
    const known = this.#ranks.get(run);
    if (known !== undefined) return known;
    const rank = this.#next++;
    this.#ranks.set(run, rank);
    // Runs end without saying so here: the oldest go once there are many.
    if (this.#ranks.size > RANKED_RUNS) this.#ranks.delete(this.#ranks.keys().next().value as string);
    return rank;
  }
}

/** How many runs' start order is remembered. */
const RANKED_RUNS = 4096;

/** A request's prompt in tokens, as a server's template renders it: tools, then messages, 4 characters a token. */
export function promptTokens(request: ChatRequest): number {
  return Math.ceil(JSON.stringify({ tools: request.tools, messages: request.messages }).length / 4);
}

/**
 * The turn's prefill: as the server reports it (llama-server `timings.prompt_n`/`prompt_ms`), else
 * its uncached prompt tokens (the server's `cache_n` where it says) and the ms before its first token.
 */
export function prefillOf(turn: ChatTurn, ms: number): Prefill {
  if (turn.usage.prefill !== undefined) {
    return { ...turn.usage.prefill, reported: true, cached: turn.usage.cachedTokens };
  }
  return { tokens: turn.usage.promptTokens - (turn.usage.cachedTokens ?? 0), ms };
}

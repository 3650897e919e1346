/**
 * The time a GPU server spends on a prompt before its first token (research/lm-server-protocols.md:
 * llama-server and LM Studio keep each slot's last prompt and prefill only what a new request does
 * not share with it). One slot per fake: a request reuses the longest prefix it shares with the
 * last prompt the server saw, the rest is prefilled at `tokensPerSecond` (4 characters a token).
 */
export interface PrefillClock {
  /** The request's prefill; the request then becomes the cached prompt. */
  take(body: unknown): Prefilled;
}

/** One request's simulated prefill. */
export interface Prefilled {
  /** Milliseconds the uncached part takes. */
  readonly ms: number;
  /** Prompt tokens served from the cached prompt, and those evaluated. */
  readonly cached: number;
  readonly evaluated: number;
}

export function prefillClock(tokensPerSecond: number): PrefillClock {
  let cached = '';
  return {
    take(body) {
      const { tools, messages } = (typeof body === 'object' && body !== null ? body : {}) as {
        tools?: unknown;
        messages?: unknown;
      };
      const text = JSON.stringify({ tools, messages });
      const n = Math.min(cached.length, text.length);
      let shared = 0;
      while (shared < n && cached.charCodeAt(shared) === text.charCodeAt(shared)) shared += 1;
      cached = text;
      const evaluated = Math.ceil((text.length - shared) / 4);
      return { ms: (evaluated / tokensPerSecond) * 1000, cached: Math.floor(shared / 4), evaluated };
    },
  };
}

/**
 * llama-server's `timings` for a prefill (tools/server: `result_timings`), as it puts them on a
 * stream's last chunk: `cache_n` reused, `prompt_n` evaluated in `prompt_ms`.
 */
export function llamaTimings(prefill: Prefilled): Record<string, number> {
  return {
    cache_n: prefill.cached,
    prompt_n: prefill.evaluated,
    prompt_ms: prefill.ms,
    prompt_per_token_ms: prefill.evaluated === 0 ? 0 : prefill.ms / prefill.evaluated,
    prompt_per_second: prefill.ms === 0 ? 0 : (prefill.evaluated / prefill.ms) * 1000,
  };
}

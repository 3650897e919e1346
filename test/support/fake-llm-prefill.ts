/**
 * The time a GPU server spends on a prompt before its first token (research/lm-server-protocols.md:
 * llama-server and LM Studio keep each slot's last prompt and prefill only what a new request does
 * not share with it). One slot per fake: a request reuses the longest prefix it shares with the
 * last prompt the server saw, the rest is prefilled at `tokensPerSecond` (4 characters a token).
 * `hostCache`: llama-server's host-memory prompt cache (`--cache-ram`, research/local-model-quirks-2.md):
 * a prompt evicted from the slot is kept, and a request restores the one sharing the longest prefix.
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

export function prefillClock(tokensPerSecond: number, hostCache = false): PrefillClock {
  let cached = '';
  /** Prompts evicted from the slot, kept in host memory (newest last). */
  const kept: string[] = [];
  const sharedWith = (prompt: string, text: string): number => {
    const n = Math.min(prompt.length, text.length);
    let shared = 0;
    while (shared < n && prompt.charCodeAt(shared) === text.charCodeAt(shared)) shared += 1;
    return shared;
  };
  return {
    take(body) {
      const { tools, messages } = (typeof body === 'object' && body !== null ? body : {}) as {
        tools?: unknown;
        messages?: unknown;
      };
      const text = JSON.stringify({ tools, messages });
      let shared = sharedWith(cached, text);
      if (hostCache) {
        for (const prompt of kept) shared = Math.max(shared, sharedWith(prompt, text));
        // The slot's prompt goes to host memory unless the new one extends it (then it stays in the slot).
        if (cached !== '' && !text.startsWith(cached)) kept.push(cached);
        if (kept.length > KEPT_PROMPTS) kept.shift();
      }
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

/** How many evicted prompts the fake's host cache keeps (llama-server bounds it by `--cache-ram` MiB). */
const KEPT_PROMPTS = 32;

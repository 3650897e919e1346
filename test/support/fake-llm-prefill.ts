/**
 * The time a GPU server spends on a prompt before its first token (research/lm-server-protocols.md:
 * llama-server and LM Studio keep each slot's last prompt and prefill only what a new request does
 * not share with it). One slot per fake: a request reuses the longest prefix it shares with the
 * last prompt the server saw, the rest is prefilled at `tokensPerSecond` (4 characters a token).
 */
export interface PrefillClock {
  /** Milliseconds the request's uncached part takes; the request then becomes the cached prompt. */
  delayMs(body: unknown): number;
}

export function prefillClock(tokensPerSecond: number): PrefillClock {
  let cached = '';
  return {
    delayMs(body) {
      const { tools, messages } = (typeof body === 'object' && body !== null ? body : {}) as {
        tools?: unknown;
        messages?: unknown;
      };
      const text = JSON.stringify({ tools, messages });
      const n = Math.min(cached.length, text.length);
      let shared = 0;
      while (shared < n && cached.charCodeAt(shared) === text.charCodeAt(shared)) shared += 1;
      cached = text;
      return ((text.length - shared) / 4 / tokensPerSecond) * 1000;
    },
  };
}

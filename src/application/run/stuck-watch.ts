/**
 * Stuck runs (SPEC §17): a model that makes the same call with the same arguments and gets the
 * same result several times in a row, or alternates two such calls, is going nowhere. A call
 * whose result changed (a `cargo_check` after an edit) is not a repeat.
 */

/** One answered tool call, as the watch compares it. */
export interface AnsweredCall {
  readonly name: string;
  readonly arguments: string;
  readonly result: string;
}

/** What the watch saw: one call repeated, or two alternating, `repeats` times each. */
export interface StuckPattern {
  readonly pattern: 'repeat' | 'alternate';
  readonly calls: readonly string[];
  readonly repeats: number;
}

/** The same arguments however the model spaced or ordered them. */
function canonical(text: string): string {
  try {
    return JSON.stringify(sortKeys(JSON.parse(text)));
  } catch {
    return text.trim();
  }
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value as Record<string, unknown>)
      .sort()
      .map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]),
  );
}

/** Watches a run's answered calls, in order. */
export class StuckWatch {
  readonly #repeats: number;
  #history: { readonly key: string; readonly name: string }[] = [];

  /** `repeats`: how many times in a row make a run stuck (4 by default, at least 2). */
  constructor(repeats = 4) {
    this.#repeats = Math.max(2, repeats);
  }

  /** Adds a step's answered calls; returns the pattern when the run now looks stuck. */
  observe(calls: readonly AnsweredCall[]): StuckPattern | null {
    for (const call of calls) {
      this.#history.push({
        key: `${call.name}\u0000${canonical(call.arguments)}\u0000${call.result}`,
        name: call.name,
      });
    }
    const n = this.#repeats;
    this.#history = this.#history.slice(-2 * n);
    const last = this.#history.slice(-n);
    if (last.length === n && last.every((entry) => entry.key === last[0]!.key)) {
      return { pattern: 'repeat', calls: [last[0]!.name], repeats: n };
    }
    const pairs = this.#history;
    if (pairs.length === 2 * n) {
      const [a, b] = [pairs[0]!.key, pairs[1]!.key];
      if (a !== b && pairs.every((entry, i) => entry.key === (i % 2 === 0 ? a : b))) {
        return { pattern: 'alternate', calls: [pairs[0]!.name, pairs[1]!.name], repeats: n };
      }
    }
    return null;
  }

  /** Forgets what was seen (after the model was told): it gets a fresh chance to change course. */
  reset(): void {
    this.#history = [];
  }
}

/** What a stuck run is, in a few words, for people (the run's error, the timelines). */
export function describeStuck(stuck: Pick<StuckPattern, 'pattern' | 'calls' | 'repeats'>): string {
  return stuck.pattern === 'repeat'
    ? `${stuck.calls[0]} called ${stuck.repeats} times in a row with the same arguments and the same result`
    : `${stuck.calls[0]} and ${stuck.calls[1]} alternated ${stuck.repeats} times each with the same arguments and results`;
}

/** What the model is told the first time. */
export function stuckMessage(stuck: StuckPattern): string {
  const what =
    stuck.pattern === 'repeat'
      ? `called ${stuck.calls[0]} ${stuck.repeats} times in a row with the same arguments and got the same result each time`
      : `alternated ${stuck.calls[0]} and ${stuck.calls[1]} ${stuck.repeats} times each with the same arguments and results`;
  return (
    `You have ${what}. Doing it again will not change anything. Try a different approach, or call ` +
    'finish_task with what you have and what is left to do.'
  );
}

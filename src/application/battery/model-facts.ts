/**
 * How each model worked over its cells (SPEC §12.1): tool calls made natively or recovered from
 * text and by which dialect, reasoning tokens, steps lost to empty turns, and the profile and
 * windows it ran with. Summed from the cells' runlog facts.
 */
import type { CellResult } from './battery-types.ts';

export interface ModelFacts {
  /** Tool calls the server returned as tool calls. */
  readonly native_calls: number;
  /** Tool calls recovered from text, by dialect. */
  readonly recovered_calls: Readonly<Record<string, number>>;
  readonly reasoning_tokens: number;
  readonly empty_turns: number;
  /** The profile globs that matched (SPEC §16), from its cells; empty when none did. */
  readonly profile: readonly string[];
  /** The profile's settings, as the runs used them. */
  readonly profile_settings: Readonly<Record<string, unknown>>;
  /** The windows its runs worked in (one, when every cell ran at the same window). */
  readonly windows: readonly number[];
}

/** Sums the facts of a model's cells (those whose runlog was read). */
export function modelFacts(cells: readonly Pick<CellResult, 'facts'>[]): ModelFacts {
  const recovered: Record<string, number> = {};
  const windows = new Set<number>();
  let native = 0;
  let reasoning = 0;
  let empty = 0;
  let profile: readonly string[] = [];
  let settings: Readonly<Record<string, unknown>> = {};
  for (const { facts } of cells) {
    if (facts === undefined) continue;
    native += facts.native_calls;
    reasoning += facts.reasoning_tokens;
    empty += facts.empty_turns;
    for (const [dialect, count] of Object.entries(facts.recovered_calls))
      recovered[dialect] = (recovered[dialect] ?? 0) + count;
    if (facts.window_tokens !== null) windows.add(facts.window_tokens);
    if (facts.profile.length > 0) {
      profile = facts.profile;
      settings = facts.profile_settings;
    }
  }
  return {
    native_calls: native,
    recovered_calls: recovered,
    reasoning_tokens: reasoning,
    empty_turns: empty,
    profile,
    profile_settings: settings,
    windows: [...windows].sort((a, b) => a - b),
  };
}

/** The calls in one phrase: `12 native · 3 recovered (hermes 2, qwen3_xml 1)`. */
export function callsText(facts: Pick<ModelFacts, 'native_calls' | 'recovered_calls'>): string {
  const dialects = Object.entries(facts.recovered_calls).sort(([a], [b]) => a.localeCompare(b));
  const recovered = dialects.reduce((sum, [, count]) => sum + count, 0);
  if (recovered === 0) return `${facts.native_calls} native`;
  return `${facts.native_calls} native · ${recovered} recovered (${dialects.map(([d, n]) => `${d} ${n}`).join(', ')})`;
}

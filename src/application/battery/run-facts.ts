/**
 * What a cell's runlog says about how its model worked (SPEC §12.1): the tools it called, its
 * calls made natively or recovered from text (and in which dialect), its reasoning tokens, the
 * turns it lost saying nothing, the window and profile it ran with. Plain data, read from the
 * events after the run; the checks and the per-model figures use it.
 */
import type { RunEvent } from '../../domain/run-events.ts';

export interface RunFacts {
  /** Every tool the run called, once each, in the order first called. */
  readonly tools_called: readonly string[];
  /** Tool calls the server returned as tool calls. */
  readonly native_calls: number;
  /** Tool calls recovered from the model's text, by dialect (`hermes`, `qwen3_xml`, ...). */
  readonly recovered_calls: Readonly<Record<string, number>>;
  readonly reasoning_tokens: number;
  /** Turns with no content and no call (native or recovered): steps lost. */
  readonly empty_turns: number;
  /** The window the run worked in (SPEC §17), when known. */
  readonly window_tokens: number | null;
  /** The profile globs that matched the model (SPEC §16); empty when none did. */
  readonly profile: readonly string[];
  /** The profile's settings (sampler, think, ...), as the run used them. */
  readonly profile_settings: Readonly<Record<string, unknown>>;
  /** From the run's start to its end, when it ended. */
  readonly seconds: number | null;
}

/** Reads a run's facts from its events. */
export function runFacts(events: readonly RunEvent[]): RunFacts {
  const tools: string[] = [];
  const recovered: Record<string, number> = {};
  const recoveredSteps = new Set<number>();
  let native = 0;
  let reasoning = 0;
  let window: number | null = null;
  let profile: readonly string[] = [];
  let settings: Readonly<Record<string, unknown>> = {};
  let seconds: number | null = null;
  const silent: number[] = [];
  for (const event of events) {
    switch (event.kind) {
      case 'run_start':
        window = event.window_tokens ?? null;
        profile = event.profile?.matched ?? [];
        settings = event.profile?.settings ?? {};
        break;
      case 'llm_response':
        native += event.tool_calls.length;
        reasoning += event.reasoning_tokens ?? 0;
        if (event.content.trim() === '' && event.tool_calls.length === 0) silent.push(event.step);
        break;
      case 'tool_call_recovered':
        if (event.tool_calls.length > 0) {
          recovered[event.format] = (recovered[event.format] ?? 0) + event.tool_calls.length;
          recoveredSteps.add(event.step);
        }
        break;
      case 'tool_call':
        if (!tools.includes(event.tool)) tools.push(event.tool);
        break;
      case 'run_end':
        seconds = Math.round(event.duration_ms / 10) / 100;
        break;
      default:
        break;
    }
  }
  return {
    tools_called: tools,
    native_calls: native,
    recovered_calls: recovered,
    reasoning_tokens: reasoning,
    // A turn whose call was recovered from its reasoning did not lose its step.
    empty_turns: silent.filter((step) => !recoveredSteps.has(step)).length,
    window_tokens: window,
    profile,
    profile_settings: settings,
    seconds,
  };
}

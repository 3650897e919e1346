/**
 * The profile a run's model runs with (SPEC §16): the shipped and configured settings for its
 * id, and what each request asks of the server. Thinking is asked for (or turned off) only for a
 * model the server says thinks: Ollama answers 400 to `think` for one that does not.
 */
import { resolveProfile } from '../../config/model-profiles.ts';
import type { ModelProfile } from '../../config/schema.ts';
import type { CatalogModel, TurnSettings } from '../ports.ts';
import type { RunProfile } from '../run/execute-task.ts';

export function runProfileFor(
  model: Pick<CatalogModel, 'id' | 'thinking'>,
  configured: Readonly<Record<string, ModelProfile>> = {},
): RunProfile {
  const resolved = resolveProfile(model.id, configured);
  const { settings } = resolved;
  const turn: TurnSettings = {
    ...(settings.temperature === undefined ? {} : { temperature: settings.temperature }),
    ...(settings.top_p === undefined ? {} : { topP: settings.top_p }),
    ...(settings.top_k === undefined ? {} : { topK: settings.top_k }),
    ...(settings.min_p === undefined ? {} : { minP: settings.min_p }),
    ...(settings.max_output_tokens === undefined ? {} : { maxOutputTokens: settings.max_output_tokens }),
    ...(settings.context_length === undefined ? {} : { contextLength: settings.context_length }),
    ...(settings.think === undefined || model.thinking !== true ? {} : { think: settings.think }),
  };
  return {
    matched: resolved.matched,
    ...(resolved.source === undefined ? {} : { source: resolved.source }),
    settings,
    turn,
    passReasoningBack: settings.pass_reasoning_back === true,
  };
}

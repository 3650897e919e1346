/**
 * Model profiles (SPEC §16): the settings each family of local models runs best with, from its
 * publisher's recommended settings, and how a model id finds its profile. `profiles:` in the
 * config overrides these key by key. Pure: the run use case and `fabric models` ask it.
 */
import type { ModelProfile } from './schema.ts';

/** A shipped profile and where its settings come from. */
export interface ShippedProfile {
  readonly glob: string;
  readonly profile: ModelProfile;
  readonly source: string;
}

/**
 * The families people run locally in 2026. Order matters: the first glob that matches wins, so
 * the more specific come first (Qwen3-coder before Qwen3). Sampler values are the publishers'
 * recommended settings; greedy decoding (temperature 0) is what they warn loops.
 */
export const SHIPPED_PROFILES: readonly ShippedProfile[] = [
  {
    glob: '*qwen3*coder*',
    // Qwen3-Coder model cards, "Best Practices": temperature=0.7, top_p=0.8, top_k=20. A
    // non-thinking model: nothing is sent about thinking.
    profile: { temperature: 0.7, top_p: 0.8, top_k: 20 },
    source: 'Qwen3-Coder model card, Best Practices',
  },
  {
    glob: '*qwen3*',
    // Qwen3 model cards, "Best Practices", thinking mode: Temperature=0.6, TopP=0.95, TopK=20,
    // MinP=0; "DO NOT use greedy decoding, as it can lead to performance degradation and endless
    // repetitions". Thinking is on by default (Ollama's think for qwen3).
    profile: { temperature: 0.6, top_p: 0.95, top_k: 20, min_p: 0, think: 'medium', reasoning_budget: 8192 },
    source: 'Qwen3 model card, Best Practices (thinking mode)',
  },
  {
    glob: '*gpt-oss*',
    // openai/gpt-oss README: "We recommend sampling with temperature=1.0 and top_p=1.0";
    // reasoning effort low | medium | high (Harmony), medium by default. Its template refuses an
    // assistant turn that carries both content and thinking (LM Studio #842): not passed back.
    profile: {
      temperature: 1.0,
      top_p: 1.0,
      think: 'medium',
      reasoning_budget: 16384,
      pass_reasoning_back: false,
    },
    source: 'openai/gpt-oss README, recommended sampling; reasoning effort levels',
  },
  {
    glob: '*gemma*',
    // Gemma 3 generation_config.json and Google's Gemma docs: temperature=1.0, top_k=64,
    // top_p=0.95, min_p=0.0.
    profile: { temperature: 1.0, top_k: 64, top_p: 0.95, min_p: 0 },
    source: 'Gemma 3 generation_config.json / Gemma docs',
  },
  {
    glob: '*devstral*',
    // Devstral model cards: "we recommend a temperature of 0.15".
    profile: { temperature: 0.15 },
    source: 'Devstral model card, recommended temperature',
  },
  {
    glob: '*mistral*',
    // Mistral Small 3.x model cards: "a relatively low temperature, such as temperature=0.15".
    // Mistral v3 / Nemo templates (and vLLM's mistral tokenizer mode) refuse any tool-call id that
    // is not nine alphanumerics on the next request (mlx-lm #1375, vllm #9019; quirks-2 Q10).
    profile: { temperature: 0.15, tool_call_ids: 'nine_alnum' },
    source: 'Mistral Small 3.x model card, recommended temperature; Mistral template tool-call ids',
  },
  {
    glob: '*ministral*',
    // Ministral's template checks ids as Mistral's does (quirks-2 Q10, §L).
    profile: { tool_call_ids: 'nine_alnum' },
    source: 'Mistral template tool-call ids (nine alphanumerics)',
  },
  {
    glob: '*mixtral*',
    // Mixtral's template checks ids as Mistral's does (quirks-2 Q10, §L).
    profile: { tool_call_ids: 'nine_alnum' },
    source: 'Mistral template tool-call ids (nine alphanumerics)',
  },
  {
    glob: '*llama*3*',
    // Meta Llama 3.x generation_config.json: temperature=0.6, top_p=0.9.
    profile: { temperature: 0.6, top_p: 0.9 },
    source: 'Llama 3.x generation_config.json',
  },
  {
    glob: '*glm*',
    // GLM-4.5/4.6 model cards: temperature=1.0, top_p=0.95; thinking on by default, and its tool
    // loop wants the reasoning back (interleaved thinking).
    profile: {
      temperature: 1.0,
      top_p: 0.95,
      think: 'medium',
      reasoning_budget: 16384,
      pass_reasoning_back: true,
    },
    source: 'GLM-4.5/4.6 model cards, recommended sampling; interleaved thinking',
  },
];

/** The profile a model runs with, and which globs gave it. */
export interface ResolvedProfile {
  /** The config glob and the shipped glob that matched, config first; empty when none did. */
  readonly matched: readonly string[];
  /** Where the shipped settings come from, when a shipped profile matched. */
  readonly source?: string;
  readonly settings: ModelProfile;
}

/** Whether `glob` (`*` for any run of characters, case-insensitive) matches the whole id or its last part. */
export function globMatches(glob: string, modelId: string): boolean {
  const pattern = new RegExp(
    `^${glob
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    'i',
  );
  const base = modelId.slice(modelId.lastIndexOf('/') + 1);
  return pattern.test(modelId) || pattern.test(base);
}

/**
 * The profile for a model id: the first shipped profile whose glob matches, overridden key by key
 * by the first config profile whose glob matches (in the config's order).
 */
export function resolveProfile(
  modelId: string,
  configured: Readonly<Record<string, ModelProfile>> = {},
  shipped: readonly ShippedProfile[] = SHIPPED_PROFILES,
): ResolvedProfile {
  const base = shipped.find((entry) => globMatches(entry.glob, modelId));
  const own = Object.entries(configured).find(([glob]) => globMatches(glob, modelId));
  const settings = { ...(base?.profile ?? {}), ...(own?.[1] ?? {}) };
  return {
    matched: [...(own === undefined ? [] : [own[0]]), ...(base === undefined ? [] : [base.glob])],
    ...(base === undefined ? {} : { source: base.source }),
    settings,
  };
}

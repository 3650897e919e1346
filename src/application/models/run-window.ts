/**
 * The context window a run works in (SPEC §17). With a target (the profile's `context_length`,
 * else `llm.context_length`), a model LM Studio has not loaded is loaded at it and the loaded
 * window read back (LM Studio may load less); a model already loaded at less is used as it is,
 * and that is said once, in the run's `run_start`. Ollama sizes its window per request, capped
 * at the target and at the model's trained length: the most it sends is the window.
 * llama-server (per slot), vLLM and hosted endpoints keep the window they serve at.
 */
import type { CatalogModel } from '../ports.ts';

/** The window, and what a reader should know about how it came to be. */
export interface RunWindow {
  readonly tokens: number | undefined;
  readonly note?: string;
  /** Where the window comes from (the server's own figure, or the target), when there is one. */
  readonly source?: string;
}

/** Where each backend kind says the window it serves a model at. */
const SERVED_FROM: Readonly<Record<CatalogModel['backend'], string>> = {
  lm_studio: "LM Studio's loaded context length",
  ollama: "Ollama's num_ctx as sent (the model's trained context_length)",
  llama_cpp: "llama-server's /props n_ctx (per slot)",
  vllm: "vLLM's max_model_len",
  openai: "the endpoint's catalog context_length",
};

/** What asking a backend to load a model at a window came to: the window it got, or why not. */
export type LoadResult = { readonly window: number } | { readonly failed: string };

/** Loads the model at a window where the backend can; undefined where it cannot load at a window. */
export type LoadAt = (contextLength: number) => Promise<LoadResult | undefined>;

export async function runWindowFor(
  model: Pick<
    CatalogModel,
    'id' | 'backend' | 'loaded' | 'contextLength' | 'maxContextLength' | 'windowSource'
  >,
  target: number | undefined,
  loadAt: LoadAt | undefined,
): Promise<RunWindow> {
  const window = await windowFor(model, target, loadAt);
  if (window.tokens === undefined) return window;
  const source =
    window.tokens === target && window.source === undefined
      ? model.backend === 'ollama'
        ? "Ollama's num_ctx as sent (llm.context_length or the profile's)"
        : "the target (llm.context_length or the profile's): the server did not say its window"
      : (model.windowSource ?? SERVED_FROM[model.backend]);
  return { ...window, source: window.source ?? source };
}

async function windowFor(
  model: Pick<CatalogModel, 'id' | 'backend' | 'loaded' | 'contextLength' | 'maxContextLength'>,
  target: number | undefined,
  loadAt: LoadAt | undefined,
): Promise<RunWindow> {
  if (model.backend === 'ollama') {
    // Ollama sizes num_ctx per request, up to the target and never past the trained length: the
    // most it sends is the run's window.
    const trained = model.maxContextLength;
    const most = target === undefined ? trained : trained === undefined ? target : Math.min(target, trained);
    return { tokens: most ?? model.contextLength };
  }
  if (target === undefined) return { tokens: model.contextLength };
  if (model.backend !== 'lm_studio') {
    // llama-server, vLLM and hosted endpoints run at the window they were started with.
    const served = model.contextLength;
    if (served === undefined || served >= target) return { tokens: served ?? target };
    return {
      tokens: served,
      note: `${model.backend} serves ${model.id} at ${served} tokens, less than the ${target} asked for; the run works in ${served} (start the server with a larger window: llama-server -c, vllm serve --max-model-len).`,
    };
  }
  if (model.loaded === false && loadAt !== undefined) {
    const result = await loadAt(target);
    if (result !== undefined && 'failed' in result)
      return {
        tokens: undefined,
        note: `LM Studio did not load ${model.id} at ${target} tokens (${result.failed}); it loads the model with its own default window on the first request.`,
      };
    const loaded = result?.window;
    if (loaded === undefined) return { tokens: model.contextLength ?? target };
    return loaded < target
      ? {
          tokens: loaded,
          note: `LM Studio loaded ${model.id} at ${loaded} tokens, less than the ${target} asked for (memory); the run works in ${loaded}.`,
        }
      : { tokens: loaded, note: `LM Studio loaded ${model.id} at ${loaded} tokens.` };
  }
  if (model.contextLength !== undefined && model.contextLength < target)
    return {
      tokens: model.contextLength,
      note: `${model.id} is already loaded at ${model.contextLength} tokens, less than the ${target} asked for, and is used as it is; unload it in LM Studio for the next run to load it at ${target}.`,
    };
  return { tokens: model.contextLength ?? target };
}

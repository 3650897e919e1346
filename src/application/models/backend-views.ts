/** How backends and their models are shown as JSON, the same by the CLI and the HTTP API. */
import { type BackendProbe, type CatalogModel, isHosted } from '../ports.ts';
import { type ModelCard, cardFor, cardSummary, staleness } from './model-card.ts';
import { isCandidate } from './resolve-model.ts';
import { runProfileFor } from './run-profile.ts';
import type { ModelProfile } from '../../config/schema.ts';

/** A model's profile as shown (SPEC §16): the globs that matched, its settings, the think level a run sends. */
export function profileView(
  model: Pick<CatalogModel, 'id' | 'thinking'>,
  profiles: Readonly<Record<string, ModelProfile>>,
) {
  const profile = runProfileFor(model, profiles);
  return {
    matched: profile.matched,
    source: profile.source ?? null,
    settings: profile.settings,
    think_sent: profile.turn.think ?? null,
  };
}

/** A backend and every model it has (`fabric models --json`, `GET /v1/models`), with each model's profile. */
export function backendModelsView(
  probe: BackendProbe,
  isChosen: (model: CatalogModel) => boolean = () => false,
  profiles: Readonly<Record<string, ModelProfile>> = {},
  cards: readonly ModelCard[] = [],
) {
  return {
    backend: probe.backend,
    name: probe.name ?? null,
    base_url: probe.baseUrl,
    hosted: isHosted(probe.backend),
    ok: probe.ok,
    latency_ms: probe.latencyMs,
    error: probe.error ?? null,
    models: probe.models.map((model) => ({
      id: model.id,
      type: model.type,
      tool_use: model.toolUse ?? null,
      loaded: model.loaded ?? null,
      params_b: model.paramsB ?? null,
      context_length: model.contextLength ?? null,
      max_context_length: model.maxContextLength ?? null,
      thinking: model.thinking ?? null,
      parallel: model.parallel ?? null,
      profile: profileView(model, profiles),
      chosen: isChosen(model),
      card: cardView(cardFor(cards, model), model),
    })),
  };
}

/** A backend's state and how many of its models a run could use (`fabric health lm --json`, `GET /v1/health`). */
export function backendHealthView(probe: BackendProbe) {
  const usableModels = probe.models.filter(isCandidate).length;
  const windows = [
    ...new Set(probe.models.map((model) => model.contextLength).filter((n) => n !== undefined)),
  ];
  return {
    backend: probe.backend,
    name: probe.name ?? null,
    base_url: probe.baseUrl,
    hosted: isHosted(probe.backend),
    state: probe.ok
      ? ('up' as const)
      : probe.denied
        ? ('denied' as const)
        : probe.loading
          ? ('loading' as const)
          : ('down' as const),
    /** The windows its models are served at (one for llama-server and vLLM). */
    windows,
    /** How many of its models are known to take tools. */
    tool_models: probe.models.filter((model) => model.toolUse === true).length,
    usable: probe.ok && usableModels > 0,
    latency_ms: probe.latencyMs,
    models: probe.models.length,
    usable_models: usableModels,
    error: probe.error ?? null,
  };
}

/** A model card as the CLI's JSON and `GET /v1/models` show it: without the raw exchanges. */
export function cardView(card: ModelCard | undefined, now?: CatalogModel) {
  if (card === undefined) return null;
  return {
    ...card,
    summary: cardSummary(card),
    /** Why the card no longer describes the listed model, or null. */
    stale: staleness(card, now),
    probes: card.probes.map(({ exchanges: _, ...probe }) => probe),
  };
}

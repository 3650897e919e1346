/** How backends and their models are shown as JSON, the same by the CLI and the HTTP API. */
import type { BackendProbe, CatalogModel } from '../ports.ts';
import { isCandidate } from './resolve-model.ts';

/** A backend and every model it has (`fabric models --json`, `GET /v1/models`). */
export function backendModelsView(
  probe: BackendProbe,
  isChosen: (model: CatalogModel) => boolean = () => false,
) {
  return {
    backend: probe.backend,
    base_url: probe.baseUrl,
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
      chosen: isChosen(model),
    })),
  };
}

/** A backend's state and how many of its models a run could use (`fabric health lm --json`, `GET /v1/health`). */
export function backendHealthView(probe: BackendProbe) {
  const usableModels = probe.models.filter(isCandidate).length;
  return {
    backend: probe.backend,
    base_url: probe.baseUrl,
    state: probe.ok ? ('up' as const) : ('down' as const),
    usable: probe.ok && usableModels > 0,
    latency_ms: probe.latencyMs,
    models: probe.models.length,
    usable_models: usableModels,
    error: probe.error ?? null,
  };
}

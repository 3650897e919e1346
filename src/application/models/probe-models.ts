/**
 * `fabric models probe` as a use case (SPEC §20): picks the models to probe from what the servers
 * list, runs the suite on each in turn (one model at a time: a probe's speed figures mean nothing
 * while another model shares the GPU), and keeps every card.
 */
import { FabricError } from '../../domain/errors.ts';
import { type BackendProbe, type CatalogModel, type ChatClient, type Clock, isHosted } from '../ports.ts';
import type { ModelCard, ModelCardStore } from './model-card.ts';
import { type ProbeLimits, type ProbeProgress, runProbeSuite } from './probe-suite.ts';
import { sameModel } from './resolve-model.ts';

export interface ProbeModelsDeps {
  /** A client that sends to this model's server alone (no failover: the probe measures one server). */
  readonly clientFor: (model: CatalogModel) => Promise<ChatClient | undefined>;
  readonly cards: ModelCardStore;
  readonly clock: Clock;
}

export interface ProbeModelsRequest {
  /** Model ids (aliases expanded) to probe; empty: every local chat model the servers list. */
  readonly names: readonly string[];
  readonly limits?: ProbeLimits;
  readonly onProgress?: ProbeProgress;
  /** Called when a model's suite starts, with its place in the queue. */
  readonly onModel?: (model: CatalogModel, index: number, total: number) => void;
  readonly signal?: AbortSignal;
}

/** The models a probe covers: the named ones (hosted too: a name is consent), else every local chat model. */
export function modelsToProbe(probes: readonly BackendProbe[], names: readonly string[]): CatalogModel[] {
  const listed = probes.filter((probe) => probe.ok).flatMap((probe) => probe.models);
  if (names.length === 0) {
    return listed.filter((model) => model.type !== 'embedding' && !isHosted(model.backend));
  }
  const missing = names.filter((name) => !listed.some((model) => sameModel(model.id, name)));
  if (missing.length > 0) {
    const have = listed.map((model) => model.id).join(', ') || 'none';
    throw new FabricError(
      'model_not_found',
      `No backend has ${missing.map((name) => `"${name}"`).join(', ')} to probe. Models listed: ${have}. ` +
        '`fabric models` shows what each backend has.',
    );
  }
  return listed.filter((model) => names.some((name) => sameModel(model.id, name)));
}

/** Probes each model and saves its card; the cards, in the order probed. */
export async function probeModels(
  probes: readonly BackendProbe[],
  request: ProbeModelsRequest,
  deps: ProbeModelsDeps,
): Promise<ModelCard[]> {
  const targets = modelsToProbe(probes, request.names);
  if (targets.length === 0) {
    throw new FabricError(
      'model_not_found',
      'No local chat model to probe: the servers answered with none. Load or pull one, or name a model to probe.',
    );
  }
  const cards: ModelCard[] = [];
  for (const [index, model] of targets.entries()) {
    request.signal?.throwIfAborted();
    const client = await deps.clientFor(model);
    if (client === undefined) continue;
    request.onModel?.(model, index, targets.length);
    const card = await runProbeSuite(
      { model, client },
      {
        clock: deps.clock,
        ...(request.limits === undefined ? {} : { limits: request.limits }),
        ...(request.onProgress === undefined ? {} : { onProgress: request.onProgress }),
        ...(request.signal === undefined ? {} : { signal: request.signal }),
      },
    );
    const previous = (await deps.cards.list()).find(
      (old) => old.model === card.model && old.backend === card.backend && old.baseUrl === card.baseUrl,
    );
    // A new probe keeps what batteries measured: those figures are not the probe's to forget.
    const kept = previous === undefined ? card : { ...card, battery: previous.battery };
    await deps.cards.save(kept);
    cards.push(kept);
  }
  return cards;
}

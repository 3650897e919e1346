/** The probe suite and the model cards, wired to a fabric's backends and runs directory (SPEC §20). */
import type { ModelCard, ModelCardStore } from '../application/models/model-card.ts';
import { type ProbeModelsRequest, probeModels } from '../application/models/probe-models.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { writeProbeReport } from '../infrastructure/runlog/probe-report.ts';
import type { Fabric } from './fabric.ts';

/** Where a fabric keeps its model cards: under its runs directory, and in its control plane. */
export function modelCardStore(fabric: Fabric): ModelCardStore {
  return fabric.modelCards();
}

/** Probes the named models (or every local chat model) and keeps their cards. */
export async function probeFabricModels(fabric: Fabric, request: ProbeModelsRequest): Promise<ModelCard[]> {
  const probes = await fabric.catalog.probe(request.signal);
  return probeModels(probes, request, {
    clientFor: (model) => fabric.modelClientFor(model, request.signal),
    cards: modelCardStore(fabric),
    clock: systemClock,
  });
}

/** Writes a probe report to `dir` with every key of the fabric's config scrubbed; the folder written. */
export function writeModelReport(fabric: Fabric, dir: string, cards: readonly ModelCard[]): Promise<string> {
  const secrets = fabric.config.llm.backends.flatMap((backend) =>
    backend.api_key === undefined ? [] : [backend.api_key.reveal()],
  );
  return writeProbeReport(dir, cards, secrets);
}

/**
 * `daemon.models: auto` (SPEC §20, §11.1): the daemon's escalation ordered by measured success on
 * its specialist's tasks — the battery pass rate for that specialist, else the probe score — best
 * first, never a model measured unable to call tools. Only local models are measured into it; a
 * hosted one is reached only when named in the list, after the local ones (seed ADR-008).
 */
import { FabricError } from '../../domain/errors.ts';
import { type BackendProbe, isHosted } from '../ports.ts';
import { type Measurements, measurement, rankMeasured } from './measured-choice.ts';
import { staleness } from './model-card.ts';
import { compareCandidates, isCandidate, noModel, sameModel } from './resolve-model.ts';

/** The word that stands for the measured local models in `daemon.models`. */
export const AUTO = 'auto';

/** One model of the escalation and why it is where it is. */
export interface EscalationStep {
  readonly model: string;
  /** `<backend> <url>` of the measured card; null for a model named in the list. */
  readonly server: string | null;
  /** What was measured, with its date; or that the model was named. */
  readonly measurement: string;
}

/** The escalation `auto` gave, with the models it left out and why. */
export interface AutoEscalation {
  readonly models: readonly string[];
  readonly steps: readonly EscalationStep[];
  readonly leftOut: readonly { readonly model: string; readonly why: string }[];
}

/**
 * Expands `auto` in `entries` (daemon.models) into the local models measured able, best first;
 * other entries are named models, kept in their order, a hosted one moved after every local one.
 * Throws when `auto` finds nothing to try and nothing else is named.
 */
export function autoEscalation(
  probes: readonly BackendProbe[],
  entries: readonly string[],
  measurements: Measurements,
): AutoEscalation {
  const named = entries.filter((entry) => entry !== AUTO);
  const local = probes.filter((probe) => probe.ok && !isHosted(probe.backend));
  const candidates = local
    .flatMap((probe) => probe.models)
    .filter(isCandidate)
    .sort(compareCandidates);
  const { ranked, unable } = rankMeasured(candidates, measurements);
  const measured: EscalationStep[] = [];
  for (const entry of ranked) {
    // The same model on several servers: its best card speaks for it (a named model goes anywhere).
    if (measured.some((step) => sameModel(step.model, entry.model.id))) continue;
    if (named.some((name) => sameModel(name, entry.model.id))) continue;
    const stale = staleness(entry.card, entry.model);
    measured.push({
      model: entry.model.id,
      server: `${entry.model.backend} ${entry.model.baseUrl}`,
      measurement: `${measurement(entry, measurements.specialist)}${stale === null ? '' : ` (card ${stale})`}`,
    });
  }
  const leftOut = [
    ...unable.map((model) => ({
      model: model.id,
      why: `measured unable to call tools on ${model.backend} ${model.baseUrl}`,
    })),
    ...candidates
      .filter((model) => !ranked.some((entry) => entry.model === model) && !unable.includes(model))
      .filter((model) => !named.some((name) => sameModel(name, model.id)))
      .map((model) => ({
        model: model.id,
        why: `no measurement: \`fabric models probe ${model.id}\` measures it`,
      })),
  ];
  if (measured.length === 0 && named.length === 0) {
    const why =
      local.length === 0
        ? 'no local model server answered'
        : `no local model was measured able to call tools${
            leftOut.length === 0 ? '' : ` (${leftOut.map((out) => `${out.model}: ${out.why}`).join('; ')})`
          }`;
    const error = noModel(probes, `daemon.models is auto, but ${why}.`);
    throw new FabricError(
      error.code,
      `${error.message}\nRun \`fabric models probe\` to measure the local models, or list the models in daemon.models.`,
      { details: error.details },
    );
  }
  const hostedOnly = (name: string) => {
    const on = (probe: BackendProbe) => probe.ok && probe.models.some((m) => sameModel(m.id, name));
    return probes.some((probe) => isHosted(probe.backend) && on(probe)) && !local.some(on);
  };
  const steps = entries.flatMap((entry): EscalationStep[] =>
    entry === AUTO ? measured : [{ model: entry, server: null, measurement: 'named in daemon.models' }],
  );
  // Local first (ADR-008): a hosted model named before `auto` still comes after the local ones.
  const ordered = [
    ...steps.filter((step) => !hostedOnly(step.model)),
    ...steps.filter((step) => hostedOnly(step.model)),
  ];
  return { models: ordered.map((step) => step.model), steps: ordered, leftOut };
}

/** Whether a `daemon.models` list asks for the measured order. */
export function wantsAuto(entries: readonly string[] | undefined): boolean {
  return entries?.includes(AUTO) === true;
}

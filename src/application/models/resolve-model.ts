import { FabricError } from '../../domain/errors.ts';
import { type BackendProbe, type CatalogModel, isHosted } from '../ports.ts';
import { plural } from '../../domain/words.ts';
import { type Measurements, chooseMeasured } from './measured-choice.ts';

/** The model a run will use, and why it was chosen. */
export interface ModelChoice {
  readonly model: CatalogModel;
  readonly reason: string;
}

export interface ResolveOptions {
  /** `--model`: must exist; no fallback. */
  readonly flagModel?: string | undefined;
  /** Where `flagModel` came from, as the user would name it (default `--model`; `LM_STUDIO_MODEL`, `daemon.model`). */
  readonly flagFrom?: string | undefined;
  /** The specialist's `model:` (aliases already expanded): used when some healthy backend has it. */
  readonly configuredModel?: string | undefined;
  /** Model cards (SPEC §20): with them, the best available is the measured best. */
  readonly measured?: Measurements | undefined;
  /**
   * A resumed run's model and the server it was on (`<backend> <url>`, as its runlog says): kept
   * when that server still serves it, so its prompt cache can (SPEC §18); else the same model
   * elsewhere; else the rules below, the reason saying why.
   */
  readonly previous?: { readonly model: string; readonly server: string } | undefined;
}

/** Ollama's rule: a name without a tag means `:latest`. */
export function sameModel(a: string, b: string): boolean {
  const norm = (id: string) => (/:[^/]+$/.test(id) ? id : `${id}:latest`).toLowerCase();
  return a.toLowerCase() === b.toLowerCase() || norm(a) === norm(b);
}

/**
 * Picks the model (SPEC §5): the requested one if a healthy backend has it; otherwise the best
 * available — never an embedding model, never one known to lack tools; tool-capable before
 * unknown; loaded before unloaded; then the smallest by parameter count.
 */
export function resolveModel(probes: readonly BackendProbe[], options: ResolveOptions): ModelChoice {
  const healthy = probes.filter((probe) => probe.ok);
  const all = healthy.flatMap((probe) => probe.models);
  // The same model on several servers: the loaded copy first (no load wait), as for the best available.
  const find = (id: string) => all.filter((model) => sameModel(model.id, id)).sort(compareCandidates)[0];
  if (options.flagModel !== undefined) {
    const from = options.flagFrom ?? '--model';
    const found = find(options.flagModel);
    if (found) return { model: found, reason: `${from} ${options.flagModel}, found on ${where(found)}` };
    throw noModel(
      probes,
      healthy.length === 0
        ? `No model server answered, so the model "${options.flagModel}" given with ${from} cannot be used.`
        : `No backend has the model "${options.flagModel}" given with ${from}.`,
    );
  }
  let prefix = '';
  if (options.previous !== undefined) {
    const { model: id, server } = options.previous;
    const same = all.find((model) => sameModel(model.id, id) && where(model) === server);
    if (same) return { model: same, reason: `the server the run was on: ${id} on ${server}` };
    const why = healthy.some((probe) => `${probe.backend} ${probe.baseUrl}` === server)
      ? `the server the run was on (${server}) no longer serves ${id}`
      : `the server the run was on (${server}) did not answer`;
    const elsewhere = find(id);
    if (elsewhere) return { model: elsewhere, reason: `${why}; ${id} found on ${where(elsewhere)}` };
    prefix = `${why}, and no other server has ${id}; `;
  }
  // A model is named, so a hosted one may serve it (the specialist's `model:`, a profile, a battery).
  if (options.configuredModel !== undefined) {
    const found = find(options.configuredModel);
    if (found)
      return {
        model: found,
        reason: `${prefix}configured model ${options.configuredModel}, found on ${where(found)}`,
      };
    prefix = `${prefix}configured model ${options.configuredModel} is not on any backend; `;
  }
  // Local first (SPEC §5, seed ADR-008): a hosted backend is never chosen on its own, even when
  // every local server is down.
  const local = probes.filter((probe) => !isHosted(probe.backend));
  const localHealthy = local.filter((probe) => probe.ok);
  const localModels = localHealthy.flatMap((probe) => probe.models);
  const listed = [...localModels.filter(isCandidate)].sort(compareCandidates);
  const measured = options.measured === undefined ? undefined : chooseMeasured(listed, options.measured);
  if (measured?.best !== undefined)
    return { model: measured.best.model, reason: `${prefix}${measured.best.reason}` };
  // Never a model measured unable to call tools, whatever its server says of it.
  const ranked = listed.filter((model) => !measured?.unable.includes(model));
  const best = ranked[0];
  if (!best) {
    const unable = measured?.unable.length ?? 0;
    const skipped =
      localModels.length > 0
        ? ` (${plural(localModels.length, 'model')} seen, all embedding models or without tool support${
            unable > 0
              ? `; ${plural(unable, 'model')} measured unable to call tools by \`fabric models probe\``
              : ''
          })`
        : '';
    const headline =
      localHealthy.length === 0
        ? 'No model server answered, so no model can be chosen.'
        : `No tool-capable chat model is available${skipped}.`;
    const hosted = probes.length > local.length ? HOSTED_NOTE : '';
    throw noModel(local.length === 0 ? probes : local, `${headline}${hosted}`);
  }
  return { model: best, reason: `${prefix}best available: ${describeRank(best)}, on ${where(best)}` };
}

/** A model the best-available rule may pick: a chat model not known to lack tools. */
export function isCandidate(model: CatalogModel): boolean {
  return model.type !== 'embedding' && model.toolUse !== false;
}

/** SPEC §5's order: tool-capable before unknown, loaded before not, then the smallest. */
export function compareCandidates(a: CatalogModel, b: CatalogModel): number {
  const tools = rank(a.toolUse) - rank(b.toolUse);
  if (tools !== 0) return tools;
  const loaded = rank(a.loaded) - rank(b.loaded);
  if (loaded !== 0) return loaded;
  return (a.paramsB ?? Number.POSITIVE_INFINITY) - (b.paramsB ?? Number.POSITIVE_INFINITY);
}

/** true before unknown before false. */
function rank(flag: boolean | undefined): number {
  return flag === true ? 0 : flag === undefined ? 1 : 2;
}

function describeRank(model: CatalogModel): string {
  const parts = [
    model.toolUse === true ? 'tool-capable' : 'tool capability unknown',
    model.loaded === true ? 'loaded' : model.loaded === false ? 'not loaded' : 'load state unknown',
    model.paramsB === undefined ? 'size unknown' : `${Number(model.paramsB.toPrecision(3))}B parameters`,
  ];
  return `${model.id} (${parts.join(', ')})`;
}

const HOSTED_NOTE =
  ' A hosted backend of llm.backends is used only for a model named with --model or `model:`, never chosen on its own.';

function where(model: CatalogModel): string {
  return `${model.backend} ${model.baseUrl}`;
}

/**
 * `backend_unavailable` when no server answered at all (start one), `model_not_found` when some
 * did but none has a usable model (load or pull one): the two have different fixes.
 */
export function noModel(probes: readonly BackendProbe[], headline: string): FabricError {
  const lines = probes.map((probe) => {
    if (probe.denied) return `  - ${probe.backend} ${probe.baseUrl}: refused (${probe.error ?? 'no key'})`;
    if (!probe.ok)
      return `  - ${probe.backend} ${probe.baseUrl}: unreachable (${probe.error ?? 'no answer'})`;
    const models = probe.models.map((model) => describeModel(model)).join(', ');
    return `  - ${probe.backend} ${probe.baseUrl}: ${probe.models.length === 0 ? 'no models' : models}`;
  });
  // Nothing answered: the fix is to start a server, not to load a model into one.
  const answered = probes.some((probe) => probe.ok);
  const advice = answered
    ? 'Load a tool-capable model in LM Studio (`lms load <model>`) or pull one with Ollama ' +
      '(`ollama pull qwen2.5-coder:7b`), or point LM_STUDIO_URL / OLLAMA_HOST at a server that has one.'
    : "Start LM Studio's server (`lms server start`) or Ollama (`ollama serve`), or point " +
      'LM_STUDIO_URL / OLLAMA_HOST at a running one; `fabric health lm` checks them.';
  return new FabricError(
    answered ? 'model_not_found' : 'backend_unavailable',
    `${headline}\nAsked:\n${lines.join('\n')}\n${advice}`,
    {
      details: { probes },
    },
  );
}

function describeModel(model: CatalogModel): string {
  const notes: string[] = [];
  if (model.type === 'embedding') notes.push('embedding');
  if (model.toolUse === false) notes.push('no tools');
  return notes.length > 0 ? `${model.id} (${notes.join(', ')})` : model.id;
}

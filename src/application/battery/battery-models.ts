/**
 * A battery's models (SPEC §12): which ones it compares (`--models`, the file's, or every
 * tool-capable one), and whether each can run a cell now — asked of the backends' catalog, with
 * aliases expanded by the one expansion (`expandModelAlias`).
 */
import type { BatteryFile } from '../../config/battery-file.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { RunResult } from '../../domain/run-result.ts';
import { noModel, sameModel } from '../models/resolve-model.ts';
import { closestName, plural } from '../../domain/words.ts';
import type { RunTask } from '../run/run-request.ts';
import { isHosted } from '../ports.ts';
import type { CellRunRequest, CellRunner } from './battery-ports.ts';
import type { BatteryModels } from './session-ports.ts';

/**
 * The battery's models: `--models`, else the file's; `available` = every tool-capable model.
 * A named model that no answering server lists is refused before any cell runs (SPEC §12,
 * amended): a typo is not an infrastructure failure. When no server answers, nothing is refused
 * here: each cell then fails as an infrastructure failure, and `--resume` runs it again.
 */
export async function resolveBatteryModels(
  models: Pick<BatteryModels, 'probe'>,
  battery: BatteryFile,
  flag: readonly string[] | 'available' | undefined,
  signal: AbortSignal,
  expandModelAlias: (name: string) => string = (name) => name,
): Promise<string[]> {
  const wanted = flag ?? battery.models;
  if (wanted === undefined) {
    throw new FabricError(
      'usage',
      `${battery.source} names no models; add \`models: [A, B]\` (or \`models: available\`) or pass --models A,B.`,
    );
  }
  if (wanted !== 'available') {
    const named = [...new Set(wanted)];
    await refuseUnlisted(
      await models.probe(signal),
      named,
      expandModelAlias,
      flag === undefined ? battery.source : '--models',
    );
    return named;
  }
  const probes = await models.probe(signal);
  const ids: string[] = [];
  // Local first (SPEC §5): a hosted model is compared only when the battery names it.
  for (const model of probes.filter((p) => p.ok && !isHosted(p.backend)).flatMap((p) => p.models)) {
    if (model.toolUse === true && model.type !== 'embedding' && !ids.some((id) => sameModel(id, model.id))) {
      ids.push(model.id);
    }
  }
  if (ids.length === 0) {
    const asked = probes.map((p) => `${p.backend} ${p.baseUrl}${p.ok ? '' : ` (${p.error ?? 'down'})`}`);
    throw new FabricError(
      // Nothing answered: start a server; something answered: load a model.
      probes.some((p) => p.ok) ? 'model_not_found' : 'backend_unavailable',
      `\`models: available\` found no tool-capable model (asked: ${asked.join(', ')}). Load one in LM Studio or pull one with Ollama; \`fabric models\` shows what each backend has.`,
    );
  }
  return ids;
}

/** Throws `model_not_found` naming each model no answering server lists, with what they offer. */
function refuseUnlisted(
  probes: Awaited<ReturnType<BatteryModels['probe']>>,
  named: readonly string[],
  expand: (name: string) => string,
  from: string,
): void {
  const answered = probes.filter((probe) => probe.ok);
  if (answered.length === 0) return;
  const offered = [...new Set(answered.flatMap((probe) => probe.models.map((model) => model.id)))];
  const missing = named.filter((name) => !offered.some((id) => sameModel(id, expand(name))));
  if (missing.length === 0) return;
  const each = missing.map((name) => {
    const id = expand(name);
    const meant = closestName(id, offered);
    return `"${name}"${id === name ? '' : ` (alias of "${id}")`}${meant === undefined ? '' : ` (did you mean "${meant}"?)`}`;
  });
  throw noModel(
    probes,
    `The battery names ${plural(missing.length, 'model')} (from ${from}) that no answering server lists, so no cell ran: ${each.join(', ')}.`,
  );
}

/** What the cell runner needs. */
export interface CatalogCellRunnerPorts {
  readonly runTask: RunTask;
  readonly expandModelAlias: (name: string) => string;
  readonly models: BatteryModels;
  readonly readRunlog?: (ref: string) => Promise<readonly RunEvent[]>;
}

/** Cells as ordinary runs of one specialist; a model's fitness read from the backends' catalog. */
export class CatalogCellRunner implements CellRunner {
  readonly #ports: CatalogCellRunnerPorts;
  readonly #specialist: string;

  constructor(ports: CatalogCellRunnerPorts, specialist: string) {
    this.#ports = ports;
    this.#specialist = specialist;
  }

  async unusable(model: string, signal: AbortSignal): Promise<string | null> {
    const id = this.#ports.expandModelAlias(model);
    // Asked again for every cell: a model loaded or unloaded since the last one counts (SPEC §12).
    this.#ports.models.refresh();
    const probes = await this.#ports.models.probe(signal);
    const copies = probes.filter((p) => p.ok).flatMap((p) => p.models.filter((m) => sameModel(m.id, id)));
    if (copies.length === 0) {
      const asked = probes.map((p) => `${p.backend} ${p.baseUrl}${p.ok ? '' : ' (down)'}`).join(', ');
      throw new FabricError(
        probes.some((p) => p.ok) ? 'model_not_found' : 'backend_unavailable',
        `No backend has the model "${id}" (asked: ${asked}). Load it in LM Studio or pull it with Ollama, or leave it out of the battery.`,
      );
    }
    if (copies.every((m) => m.type === 'embedding')) {
      return `"${id}" is an embedding model; it cannot chat. Leave it out of the battery.`;
    }
    if (copies.every((m) => m.toolUse === false)) {
      return `The model "${id}" cannot call tools (its backend says it was not trained for tool use), and every cell needs them. Pick a tool-capable model (\`fabric models\`).`;
    }
    return null;
  }

  async release(model: string): Promise<void> {
    await this.#ports.models.release?.(this.#ports.expandModelAlias(model)).catch(() => {});
  }

  events(runlog: string): Promise<readonly RunEvent[]> {
    const read = this.#ports.readRunlog;
    return read === undefined ? Promise.resolve([]) : read(runlog);
  }

  run(request: CellRunRequest): Promise<RunResult> {
    return this.#ports.runTask({
      specialist: this.#specialist,
      task: request.task,
      workspace: request.workspace,
      model: request.model,
      maxSteps: request.maxSteps,
      tags: request.tags,
      signal: request.signal,
    });
  }
}

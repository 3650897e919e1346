/**
 * A battery in one process (SPEC §12), shared by `fabric battery` and `POST /v1/batteries`: it
 * plans the cells (or picks up a battery to resume), builds the runner's ports from the Fabric,
 * runs, and keeps the battery's own state file up to date after every cell.
 */
import { realpath } from 'node:fs/promises';
import type { BatteryRecorder, CellRunRequest, CellRunner } from '../../application/battery/battery-ports.ts';
import { type BatteryOutcome, pendingCells, runBattery } from '../../application/battery/run-battery.ts';
import { type BatterySummary, summarizeBattery } from '../../application/battery/battery-summary.ts';
import {
  type BatteryPlan,
  type BatteryState,
  type CellKey,
  type CellResult,
  newBatteryId,
} from '../../application/battery/battery-types.ts';
import { sameModel } from '../../application/models/resolve-model.ts';
import { type BatteryFile, loadBatteryFile } from '../../config/battery-file.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunResult } from '../../domain/run-result.ts';
import { BatteryStateFiles } from '../../infrastructure/battery/battery-state-file.ts';
import { SandboxExpectChecks } from '../../infrastructure/battery/expect-checks.ts';
import { systemClock } from '../../infrastructure/clock.ts';
import { WorkspaceCopies } from '../../infrastructure/workspace/workspace-copy.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { BatteryControlRows } from './battery-control-rows.ts';
import { QueuedCellExecutor, archiveBatteryWorkspace } from './queued-cells.ts';
import { specialistSandbox } from '../../infrastructure/packs/rust/rust-sandbox.ts';
import { batteryAgainst, batteryWorkspace, checkBattery } from './check-battery.ts';

/** Cells queued at once by default with `queue: postgres` (the workers decide how many run). */
const QUEUED_CELLS_AT_ONCE = 1000;

/** What starts a battery: a file, or the id of one to resume (its file is then optional). */
export interface BatteryRequest {
  /** Absolute path of the battery file. */
  readonly file?: string | undefined;
  /** A battery already parsed (`POST /v1/batteries`), instead of `file`. */
  readonly battery?: BatteryFile | undefined;
  readonly resume?: string | undefined;
  /** `--models A,B` (or `available`): replaces the file's models. */
  readonly models?: readonly string[] | 'available' | undefined;
  readonly concurrency?: number | undefined;
  readonly signal: AbortSignal;
}

/** Listeners of a battery's progress (the terminal matrix, SSE). Must not throw. */
export interface BatteryListener {
  onCellStart?(cell: CellKey): void;
  onCellEnd?(result: CellResult): void;
}

/** A battery ready to run: its plan and the cells already done. */
export class BatterySession {
  readonly plan: BatteryPlan;
  readonly file: string;
  readonly concurrency: number;
  readonly #fabric: Fabric;
  readonly #states: BatteryStateFiles;
  readonly #createdAt: string;
  #cells: CellResult[];
  #status: BatteryState['status'] = 'running';
  /** With `queue: postgres`: the workspace's archive on the queue (undefined: no workspace). */
  #queued: { readonly archive: string | undefined } | undefined;

  private constructor(
    fabric: Fabric,
    plan: BatteryPlan,
    file: string,
    done: readonly CellResult[],
    createdAt: string,
    concurrency: number,
  ) {
    this.#fabric = fabric;
    this.plan = plan;
    this.file = file;
    this.#cells = [...done];
    this.#createdAt = createdAt;
    this.concurrency = concurrency;
    this.#states = new BatteryStateFiles(fabric.config.runs_dir);
  }

  /**
   * Plans a battery from its file, or picks up one to resume. Throws `config_invalid` (nothing
   * runs) for a file that does not fit the config, `run_not_found` for an unknown id.
   */
  static async open(fabric: Fabric, request: BatteryRequest): Promise<BatterySession> {
    // With the queue, the workers' own concurrency bounds the cells: every pending cell is queued.
    const concurrency =
      request.concurrency ??
      (fabric.config.queue === 'postgres'
        ? QUEUED_CELLS_AT_ONCE
        : Math.max(1, fabric.config.llm.lm_studio_urls.length));
    if (request.resume !== undefined) {
      if (request.models !== undefined) {
        throw new FabricError(
          'usage',
          '--models cannot change a battery being resumed; it keeps its models.',
        );
      }
      const state = await new BatteryStateFiles(fabric.config.runs_dir).read(request.resume);
      if (request.file !== undefined) {
        const battery = await loadBatteryFile(request.file);
        if (battery.name !== state.plan.name) {
          throw new FabricError(
            'usage',
            `Battery ${request.resume} is "${state.plan.name}", not "${battery.name}" (${request.file}). Resume it without FILE, or with its own file.`,
          );
        }
      }
      const session = new BatterySession(
        fabric,
        state.plan,
        state.file,
        state.cells,
        state.created_at,
        concurrency,
      );
      return session.#archive();
    }
    if (request.file === undefined && request.battery === undefined)
      throw new FabricError('usage', 'A battery needs a FILE (or --resume ID).');
    const battery =
      request.battery ?? (await loadBatteryFile(request.file as string, batteryAgainst(fabric.config)));
    await checkBattery(battery, fabric.config);
    const models = await resolveModels(fabric, battery, request.models, request.signal);
    const now = systemClock.now();
    const workspace = batteryWorkspace(battery, fabric.config);
    const plan: BatteryPlan = {
      id: newBatteryId(now),
      name: battery.name,
      specialist: battery.specialist,
      workspace: workspace === undefined ? undefined : await realpath(workspace),
      models,
      repeat: battery.repeat,
      maxSteps: battery.max_steps,
      tasks: battery.tasks.map((task) => ({ id: task.id, task: task.task, expect: task.expect })),
    };
    const session = new BatterySession(fabric, plan, battery.source, [], now.toISOString(), concurrency);
    return session.#archive();
  }

  /**
   * With `queue: postgres`, archives the workspace into the queue once, before any cell runs:
   * a workspace over `worker.archive_max_mib` refuses the battery (`workspace_too_large`).
   */
  async #archive(): Promise<this> {
    const services = await this.#fabric.runQueue();
    if (services !== null)
      this.#queued = { archive: await archiveBatteryWorkspace(this.#fabric, services, this.plan) };
    return this;
  }

  /** Where the battery's own state is kept. */
  get statePath(): string {
    return this.#states.pathOf(this.plan.id);
  }

  /** The cells still to run. */
  pending(): readonly CellKey[] {
    return pendingCells(this.plan, this.#cells);
  }

  /** Every cell done so far. */
  cells(): readonly CellResult[] {
    return this.#cells;
  }

  summary(): BatterySummary {
    const reason =
      this.#status === 'interrupted'
        ? `interrupted before it ran; \`fabric battery --resume ${this.plan.id}\` runs it`
        : 'not run yet';
    return summarizeBattery(this.plan, this.#cells, reason);
  }

  /** `running` until `run` ends; then `done`, or `interrupted` (resumable). */
  get status(): BatteryState['status'] {
    return this.#status;
  }

  /**
   * Runs the cells not done; the state file is written before the first cell and after each one,
   * and the control plane's rows (best-effort) as the battery starts, as cells end and at its end.
   */
  async run(signal: AbortSignal, listener: BatteryListener = {}): Promise<BatteryOutcome> {
    this.#status = 'running';
    await this.#save();
    const rows = new BatteryControlRows(this.#fabric.controlStore());
    const row = (ended: boolean) => ({
      id: this.plan.id,
      name: this.plan.name,
      specialist: this.plan.specialist,
      file: this.file,
      models: this.plan.models,
      started_at: this.#createdAt,
      ended_at: ended ? systemClock.now().toISOString() : null,
      status: this.#status,
    });
    rows.battery(row(false));
    const workspaces = new WorkspaceCopies(this.plan.workspace ?? '.', [this.#fabric.config.runs_dir]);
    const specialist = this.#fabric.registry.config(this.plan.specialist);
    const recorder: BatteryRecorder = {
      cellEnded: async (result) => {
        this.#cells = [...this.#cells.filter((c) => !sameCell(c, result)), result];
        await this.#save();
        rows.cell(this.plan.id, result);
      },
    };
    const services = this.#queued === undefined ? null : await this.#fabric.runQueue();
    const store = services === null ? null : await this.#fabric.controlStore();
    const executor =
      services === null || store === null
        ? undefined
        : new QueuedCellExecutor(services, store, this.plan.specialist, this.#queued?.archive);
    try {
      const outcome = await runBattery(
        this.plan,
        {
          runner: new FabricCellRunner(this.#fabric, this.plan.specialist),
          workspaces,
          checks: new SandboxExpectChecks(specialistSandbox(specialist)),
          recorder,
          clock: systemClock,
          ...(executor === undefined ? {} : { executor }),
        },
        {
          concurrency: this.concurrency,
          done: this.#cells,
          signal,
          ...(listener.onCellStart === undefined
            ? {}
            : { onCellStart: (cell) => listener.onCellStart?.(cell) }),
          ...(listener.onCellEnd === undefined
            ? {}
            : { onCellEnd: (result) => listener.onCellEnd?.(result) }),
        },
      );
      this.#status = outcome.interrupted ? 'interrupted' : 'done';
      await this.#save();
      rows.battery(row(true));
      return outcome;
    } finally {
      await workspaces.close();
      await rows.settled();
    }
  }

  #save(): Promise<void> {
    const state: BatteryState = {
      version: 1,
      plan: this.plan,
      file: this.file,
      status: this.#status,
      created_at: this.#createdAt,
      updated_at: systemClock.now().toISOString(),
      cells: this.#cells,
    };
    return this.#states.save(state);
  }
}

function sameCell(a: CellKey, b: CellKey): boolean {
  return a.task === b.task && a.model === b.model && a.repeat === b.repeat;
}

/** The battery's models: `--models`, else the file's; `available` = every tool-capable model. */
async function resolveModels(
  fabric: Fabric,
  battery: BatteryFile,
  flag: BatteryRequest['models'],
  signal: AbortSignal,
): Promise<string[]> {
  const wanted = flag ?? battery.models;
  if (wanted === undefined) {
    throw new FabricError(
      'usage',
      `${battery.source} names no models; add \`models: [A, B]\` (or \`models: available\`) or pass --models A,B.`,
    );
  }
  if (wanted !== 'available') return [...new Set(wanted)];
  const probes = await fabric.catalog.probe(signal);
  const ids: string[] = [];
  for (const model of probes.filter((p) => p.ok).flatMap((p) => p.models)) {
    if (model.toolUse === true && model.type !== 'embedding' && !ids.some((id) => sameModel(id, model.id))) {
      ids.push(model.id);
    }
  }
  if (ids.length === 0) {
    const asked = probes.map((p) => `${p.backend} ${p.baseUrl}${p.ok ? '' : ` (${p.error ?? 'down'})`}`);
    throw new FabricError(
      // Nothing answered: start a server; something answered: load a model (issue 20).
      probes.some((p) => p.ok) ? 'model_not_found' : 'backend_unavailable',
      `\`models: available\` found no tool-capable model (asked: ${asked.join(', ')}). Load one in LM Studio or pull one with Ollama; \`fabric models\` shows what each backend has.`,
    );
  }
  return ids;
}

/** Cells as ordinary runs through the Fabric; a model's fitness read from the backends' catalog. */
class FabricCellRunner implements CellRunner {
  readonly #fabric: Fabric;
  readonly #specialist: string;

  constructor(fabric: Fabric, specialist: string) {
    this.#fabric = fabric;
    this.#specialist = specialist;
  }

  async unusable(model: string, signal: AbortSignal): Promise<string | null> {
    const id = this.#fabric.config.llm.models[model] ?? model;
    // Asked again for every cell: a model loaded or unloaded since the last one counts (SPEC §12).
    this.#fabric.refreshCatalog();
    const probes = await this.#fabric.catalog.probe(signal);
    const copies = probes.filter((p) => p.ok).flatMap((p) => p.models.filter((m) => sameModel(m.id, id)));
    if (copies.length === 0) {
      const asked = probes.map((p) => `${p.backend} ${p.baseUrl}${p.ok ? '' : ' (down)'}`).join(', ');
      return `No backend has the model "${id}" (asked: ${asked}). Load it in LM Studio or pull it with Ollama, or leave it out of the battery.`;
    }
    if (copies.every((m) => m.type === 'embedding')) {
      return `"${id}" is an embedding model; it cannot chat. Leave it out of the battery.`;
    }
    if (copies.every((m) => m.toolUse === false)) {
      return `The model "${id}" cannot call tools (its backend says it was not trained for tool use), and every cell needs them. Pick a tool-capable model (\`fabric models\`).`;
    }
    return null;
  }

  run(request: CellRunRequest): Promise<RunResult> {
    return this.#fabric.run({
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

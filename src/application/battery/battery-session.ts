/**
 * A battery in one process (SPEC §12), shared by `fabric battery` and `POST /v1/batteries`: it
 * plans the cells (or picks up a battery to resume), gives the runner its ports, runs, and keeps
 * the battery's own state up to date after every cell. It reaches the world through
 * `BatterySessionPorts` only (wired in `src/composition/battery.ts`).
 */
import type { BatteryFile } from '../../config/battery-file.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { markCards } from './battery-cards.ts';
import { BatteryControlRows } from './battery-control-rows.ts';
import { CatalogCellRunner, resolveBatteryModels } from './battery-models.ts';
import type { BatteryRecorder } from './battery-ports.ts';
import { batterySummaryOf } from './battery-read-model.ts';
import type { BatterySummary } from './battery-summary.ts';
import {
  type BatteryPlan,
  type BatteryState,
  type CellKey,
  type CellResult,
  cellId,
  newBatteryId,
} from './battery-types.ts';
import { batteryAgainst, batteryWorkspace, checkBattery } from './check-battery.ts';
import { QueuedCellExecutor, archiveBatteryWorkspace } from './queued-cells.ts';
import { type BatteryOutcome, pendingCells, runBattery } from './run-battery.ts';
import type { BatterySessionPorts } from './session-ports.ts';

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
  /** Told once what the battery wrote beside its cells (pass rates onto model cards), or why not. */
  onNotice?(message: string): void;
}

/** A battery ready to run: its plan and the cells already done. */
export class BatterySession {
  readonly plan: BatteryPlan;
  readonly file: string;
  readonly concurrency: number;
  readonly #ports: BatterySessionPorts;
  readonly #createdAt: string;
  #cells: CellResult[];
  /** The ids of the cells running now. */
  readonly #started = new Set<string>();
  #status: BatteryState['status'] = 'running';
  /** With `queue: postgres`: the workspace's archive on the queue (undefined: no workspace). */
  #queued: { readonly archive: string | undefined } | undefined;

  private constructor(
    ports: BatterySessionPorts,
    plan: BatteryPlan,
    file: string,
    done: readonly CellResult[],
    createdAt: string,
    concurrency: number,
  ) {
    this.#ports = ports;
    this.plan = plan;
    this.file = file;
    this.#cells = [...done];
    this.#createdAt = createdAt;
    this.concurrency = concurrency;
  }

  /**
   * Plans a battery from its file, or picks up one to resume. Throws `config_invalid` (nothing
   * runs) for a file that does not fit the config, `run_not_found` for an unknown id.
   */
  static async open(ports: BatterySessionPorts, request: BatteryRequest): Promise<BatterySession> {
    const { settings } = ports;
    // With the queue, the workers' own concurrency bounds the cells: every pending cell is queued.
    const concurrency =
      request.concurrency ?? (settings.queued ? QUEUED_CELLS_AT_ONCE : Math.max(1, settings.servers));
    if (request.resume !== undefined) {
      if (request.models !== undefined) {
        throw new FabricError(
          'usage',
          '--models cannot change a battery being resumed; it keeps its models.',
        );
      }
      const state = await ports.states.read(request.resume);
      if (request.file !== undefined) {
        const battery = await ports.loadFile(request.file);
        if (battery.name !== state.plan.name) {
          throw new FabricError(
            'usage',
            `Battery ${request.resume} is "${state.plan.name}", not "${battery.name}" (${request.file}). Resume it without FILE, or with its own file.`,
          );
        }
      }
      const session = new BatterySession(
        ports,
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
    const battery = request.battery ?? (await ports.loadFile(request.file as string, batteryAgainst(ports)));
    await checkBattery(battery, ports);
    const models = await resolveBatteryModels(
      ports.models,
      battery,
      request.models,
      request.signal,
      ports.expandModelAlias,
    );
    const now = ports.clock.now();
    const workspace = batteryWorkspace(battery, settings);
    const plan: BatteryPlan = {
      id: newBatteryId(now),
      name: battery.name,
      specialist: battery.specialist,
      workspace: workspace === undefined ? undefined : await ports.paths.canonical(workspace),
      models,
      repeat: battery.repeat,
      maxSteps: battery.max_steps,
      tasks: battery.tasks.map((task) => ({ id: task.id, task: task.task, expect: task.expect })),
    };
    const session = new BatterySession(ports, plan, battery.source, [], now.toISOString(), concurrency);
    return session.#archive();
  }

  /**
   * With `queue: postgres`, archives the workspace into the queue once, before any cell runs:
   * a workspace over `worker.archive_max_mib` refuses the battery (`workspace_too_large`).
   */
  async #archive(): Promise<this> {
    const queue = await this.#ports.queue();
    if (queue !== null) this.#queued = { archive: await archiveBatteryWorkspace(queue, this.plan) };
    return this;
  }

  /** Where the battery's own state is kept. */
  get statePath(): string {
    return this.#ports.states.pathOf(this.plan.id);
  }

  /** The cells still to run. */
  pending(): readonly CellKey[] {
    return pendingCells(this.plan, this.#cells);
  }

  /** Every cell done so far. */
  cells(): readonly CellResult[] {
    return this.#cells;
  }

  /** The ids (`cellId`) of the cells running now. */
  started(): ReadonlySet<string> {
    return this.#started;
  }

  summary(): BatterySummary {
    return batterySummaryOf(this.plan, this.#cells, this.#status);
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
    const ports = this.#ports;
    const rows = new BatteryControlRows(ports.controlStore());
    const row = (ended: boolean) => ({
      id: this.plan.id,
      name: this.plan.name,
      specialist: this.plan.specialist,
      file: this.file,
      models: this.plan.models,
      started_at: this.#createdAt,
      ended_at: ended ? ports.clock.now().toISOString() : null,
      status: this.#status,
    });
    rows.battery(row(false));
    const checks = ports.checksFor(this.plan.specialist);
    const workspaces = ports.workspacesFor(this.plan.workspace);
    const recorder: BatteryRecorder = {
      cellEnded: async (result) => {
        this.#cells = [...this.#cells.filter((c) => !sameCell(c, result)), result];
        await this.#save();
        rows.cell(this.plan.id, result);
      },
    };
    try {
      const queue = this.#queued === undefined ? null : await ports.queue();
      const runs = queue === null ? null : await queue.runs();
      const executor =
        queue === null || runs === null
          ? undefined
          : new QueuedCellExecutor(
              { queue, runs, newRunId: ports.newRunId, clock: ports.clock },
              this.plan.specialist,
              this.#queued?.archive,
            );
      const outcome = await runBattery(
        this.plan,
        {
          runner: new CatalogCellRunner(ports, this.plan.specialist),
          workspaces,
          checks,
          recorder,
          clock: ports.clock,
          ...(executor === undefined ? {} : { executor }),
        },
        {
          concurrency: this.concurrency,
          servers: Math.max(1, ports.settings.servers),
          done: this.#cells,
          signal,
          onCellStart: (cell) => {
            this.#started.add(cellId(cell));
            listener.onCellStart?.(cell);
          },
          onCellEnd: (result) => {
            this.#started.delete(cellId(result));
            listener.onCellEnd?.(result);
          },
        },
      );
      this.#status = outcome.interrupted ? 'interrupted' : 'done';
      await this.#save();
      rows.battery(row(true));
      await this.#markCards(listener);
      return outcome;
    } finally {
      await workspaces.close();
      await rows.settled();
    }
  }

  /** Each model's pass rate onto its cards; a store that fails is told, never fails the battery. */
  async #markCards(listener: BatteryListener): Promise<void> {
    const cards = this.#ports.cards;
    if (cards === undefined) return;
    try {
      const marked = await markCards(
        cards,
        this.plan.specialist,
        this.summary(),
        this.#ports.clock.now().toISOString(),
      );
      if (marked.length > 0)
        listener.onNotice?.(
          `model cards marked with ${this.plan.specialist} pass rates: ${marked.join(', ')}`,
        );
    } catch (error) {
      listener.onNotice?.(`model cards not marked: ${errorMessage(error)}`);
    }
  }

  #save(): Promise<void> {
    const state: BatteryState = {
      version: 1,
      plan: this.plan,
      file: this.file,
      status: this.#status,
      created_at: this.#createdAt,
      updated_at: this.#ports.clock.now().toISOString(),
      cells: this.#cells,
    };
    return this.#ports.states.save(state);
  }
}

function sameCell(a: CellKey, b: CellKey): boolean {
  return a.task === b.task && a.model === b.model && a.repeat === b.repeat;
}

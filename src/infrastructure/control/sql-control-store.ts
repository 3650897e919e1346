import type {
  CallTotals,
  ControlBatch,
  ControlRunRow,
  ControlStore,
  ControlWriteCounts,
  HealthRow,
  InsightsData,
  MigrationReport,
  MirroredRun,
  ModelCallRecord,
  TimeWindow,
  UsageRow,
  ControlApprovalRow,
} from '../../application/control/control-ports.ts';
import type { BatteryRow, BatterySink } from '../../application/battery/battery-ports.ts';
import type { CellResult } from '../../application/battery/battery-types.ts';
import type { DaemonTaskSink } from '../../application/daemon/daemon-ports.ts';
import type { DaemonTaskRecord } from '../../application/daemon/daemon-state.ts';
import type { ModelCard, ModelCardRows } from '../../application/models/model-card.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import { queryBattery, queryBatteryCells, upsertBattery, upsertBatteryCell } from './battery-rows.ts';
import { queryDaemonTasks, upsertDaemonTask } from './daemon-tasks.ts';
import { queryCallTotals, queryHealth, queryInsights, queryUsage } from './export-queries.ts';
import { markInterrupted } from './mark-interrupted.ts';
import { queryModelCards, upsertModelCard } from './model-card-rows.ts';
import { applyMigrations } from './migrations.ts';
import { queryMirroredRuns, queryModelCalls, queryRun, queryRunEvents, queryRuns } from './run-queries.ts';
import type { SqlExecutor } from './sql-executor.ts';
import { writeBatch } from './write-batch.ts';

const MAX_FENCES = 10_000;

/**
 * The control store over any `SqlExecutor`. The Postgres and PGlite adapters differ only in
 * the executor they hand it, which is what keeps their SQL identical.
 */
export class SqlControlStore implements ControlStore, DaemonTaskSink, BatterySink, ModelCardRows {
  readonly kind: 'postgres' | 'pglite';
  readonly location: string;
  readonly #db: SqlExecutor;
  /** Run id → the lease token this process's writes for the run are fenced on (queue workers). */
  readonly #fences = new Map<string, string>();
  /** The last migration of this store, while it has not failed; writers wait for it. */
  #ready: Promise<void> | null = null;

  constructor(kind: 'postgres' | 'pglite', location: string, db: SqlExecutor) {
    this.kind = kind;
    this.location = location;
    this.#db = db;
  }

  /** Applies the migrations not applied yet (idempotent) and reports what it applied. */
  migrate(): Promise<MigrationReport> {
    const migrating = applyMigrations(this.#db);
    const ready = migrating.then(() => {});
    this.#ready = ready;
    // A failure is tried again by the next writer (the database may come back).
    ready.catch(() => {
      if (this.#ready === ready) this.#ready = null;
    });
    return migrating;
  }

  /** Runs a write once the schema is there: a first writer (the daemon, a battery) need not migrate. */
  async #afterMigrating<T>(write: () => Promise<T>): Promise<T> {
    if (this.#ready === null) void this.migrate().catch(() => {});
    await this.#ready;
    return write();
  }

  /** `control.daemon_tasks` (SPEC §11): the daemon's row for a task, rewritten as it goes. */
  recordDaemonTask(repo: string, task: DaemonTaskRecord): Promise<void> {
    return this.#afterMigrating(() => upsertDaemonTask(this.#db, repo, task));
  }

  /** A repository's rows of `control.daemon_tasks`. */
  daemonTasks(repo: string): Promise<Record<string, unknown>[]> {
    return queryDaemonTasks(this.#db, repo);
  }

  /** `control.batteries` (SPEC §12): a battery's row, rewritten as it starts and ends. */
  recordBattery(row: BatteryRow): Promise<void> {
    return this.#afterMigrating(() => upsertBattery(this.#db, row));
  }

  /** `control.battery_cells`: a cell's row, written as it ends. */
  recordBatteryCell(batteryId: string, cell: CellResult): Promise<void> {
    return this.#afterMigrating(() => upsertBatteryCell(this.#db, batteryId, cell));
  }

  /** A battery's row of `control.batteries`, or null. */
  battery(id: string): Promise<Record<string, unknown> | null> {
    return queryBattery(this.#db, id);
  }

  /** A battery's rows of `control.battery_cells`. */
  batteryCells(id: string): Promise<Record<string, unknown>[]> {
    return queryBatteryCells(this.#db, id);
  }

  /** `control.model_cards` (SPEC §20): a card's row, unless a newer probe's is there. */
  saveModelCard(card: ModelCard): Promise<void> {
    return this.#afterMigrating(() => upsertModelCard(this.#db, card));
  }

  /** Every row of `control.model_cards`. */
  modelCards(): Promise<ModelCard[]> {
    return this.#afterMigrating(() => queryModelCards(this.#db));
  }

  write(batch: ControlBatch): Promise<ControlWriteCounts> {
    // One statement, atomic by itself: one round trip (one message to the PGlite worker), and no
    // transaction to be cut in the middle of.
    return this.#afterMigrating(() => writeBatch(this.#db, batch, this.#fences));
  }

  fence(runId: string, token: string): void {
    this.#fences.set(runId, token);
    // A long-lived worker forgets the oldest: their runs ended long ago, and the backfill is done.
    if (this.#fences.size > MAX_FENCES) {
      const oldest = this.#fences.keys().next().value;
      if (oldest !== undefined) this.#fences.delete(oldest);
    }
  }

  mirroredRuns(): Promise<ReadonlyMap<string, MirroredRun>> {
    return queryMirroredRuns(this.#db);
  }

  markInterrupted(runIds: readonly string[]): Promise<number> {
    return this.#afterMigrating(() => markInterrupted(this.#db, runIds));
  }

  listRuns(options: { readonly limit: number }): Promise<readonly ControlRunRow[]> {
    return queryRuns(this.#db, options.limit);
  }

  getRun(runId: string): Promise<ControlRunRow | null> {
    return queryRun(this.#db, runId);
  }

  async leaseHeld(runId: string): Promise<boolean> {
    const rows = await this.#db.query<{ held: boolean | null }>(
      'select lease_expires > now() as held from control.runs where id = $1',
      [runId],
    );
    return rows[0]?.held === true;
  }

  runEvents(runId: string, afterSeq = 0): Promise<readonly RunEvent[]> {
    return queryRunEvents(this.#db, runId, afterSeq);
  }

  runApprovals(runId: string): Promise<readonly ControlApprovalRow[]> {
    return this.#db.query<ControlApprovalRow>(
      `select approval_id, run_id, call_id, tool, argv, rule, on_approval, state, scope, channel,
        answered_by, message
       from control.approvals where run_id = $1 order by requested_at nulls last, approval_id`,
      [runId],
    );
  }

  modelCalls(runId: string): Promise<readonly ModelCallRecord[]> {
    return queryModelCalls(this.#db, runId);
  }

  usage(window: TimeWindow): Promise<readonly UsageRow[]> {
    return queryUsage(this.#db, window);
  }

  health(window: TimeWindow): Promise<readonly HealthRow[]> {
    return queryHealth(this.#db, window);
  }

  insights(window: TimeWindow): Promise<InsightsData> {
    return queryInsights(this.#db, window);
  }

  callTotals(window: TimeWindow): Promise<CallTotals> {
    return queryCallTotals(this.#db, window);
  }

  close(): Promise<void> {
    return this.#db.close();
  }
}

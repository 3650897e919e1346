import type { CellReports, RunQueue, WorkerRegistry } from '../../application/queue/queue-ports.ts';
import { applyMigrations } from '../control/migrations.ts';
import { PostgresExecutor } from '../control/postgres-control-store.ts';
import { PgBossRunQueue } from './pg-boss-run-queue.ts';
import { PostgresCellReports } from './postgres-cell-reports.ts';
import { PostgresWorkerRegistry } from './postgres-worker-registry.ts';

/** The queue and the worker registry, on the control plane's Postgres. */
export interface QueueServices {
  readonly queue: RunQueue;
  readonly workers: WorkerRegistry;
  /** Battery cells' archives and outcomes. */
  readonly cells: CellReports;
  close(): Promise<void>;
}

/**
 * Opens the queue (pg-boss, schema `fabric_queue`) and the registry (the `control` schema,
 * migrated here too: a worker may start before any server did).
 */
export async function openRunQueue(
  dsn: string,
  options: {
    readonly onError?: (error: Error) => void;
    /** The most connections each pool opens (`control.pool_size`); default 3. */
    readonly poolSize?: number;
  } = {},
): Promise<QueueServices> {
  const poolSize = options.poolSize ?? 3;
  const executor = new PostgresExecutor(dsn, { maxConnections: Math.min(2, poolSize) });
  try {
    await applyMigrations(executor);
  } catch (error) {
    await executor.close();
    throw error;
  }
  const queue = new PgBossRunQueue(dsn, { ...options, poolSize });
  const workers = new PostgresWorkerRegistry(executor);
  // Archives are up to worker.archive_max_mib: their own pool, with time to move them.
  const cellsDb = new PostgresExecutor(dsn, { maxConnections: Math.min(2, poolSize), timeoutMs: 120_000 });
  const cells = new PostgresCellReports(cellsDb);
  return {
    queue,
    workers,
    cells,
    async close() {
      await Promise.allSettled([queue.close(), workers.close(), cellsDb.close()]);
    },
  };
}

import type { RunQueue, WorkerRegistry } from '../../application/run-queue.ts';
import { applyMigrations } from '../control/migrations.ts';
import { PostgresExecutor } from '../control/postgres-control-store.ts';
import { PgBossRunQueue } from './pg-boss-run-queue.ts';
import { PostgresWorkerRegistry } from './postgres-worker-registry.ts';

/** The queue and the worker registry, on the control plane's Postgres. */
export interface QueueServices {
  readonly queue: RunQueue;
  readonly workers: WorkerRegistry;
  close(): Promise<void>;
}

/**
 * Opens the queue (pg-boss, schema `fabric_queue`) and the registry (the `control` schema,
 * migrated here too: a worker may start before any server did).
 */
export async function openRunQueue(
  dsn: string,
  options: { readonly onError?: (error: Error) => void } = {},
): Promise<QueueServices> {
  const executor = new PostgresExecutor(dsn, { maxConnections: 2 });
  try {
    await applyMigrations(executor);
  } catch (error) {
    await executor.close();
    throw error;
  }
  const queue = new PgBossRunQueue(dsn, options);
  const workers = new PostgresWorkerRegistry(executor);
  return {
    queue,
    workers,
    async close() {
      await Promise.allSettled([queue.close(), workers.close()]);
    },
  };
}

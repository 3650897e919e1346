import type { PGlite } from '@electric-sql/pglite';
import { acquireLock } from './dir-lock.ts';
import type { SqlExecutor, SqlQuery } from './sql-executor.ts';
import { SqlControlStore } from './sql-control-store.ts';

/**
 * The embedded control plane: PGlite (Postgres in WASM) in a data directory under the runs
 * directory, so a user with no database server still gets history and exports.
 */
export class PgliteControlStore extends SqlControlStore {
  constructor(dataDir: string) {
    super('pglite', dataDir, new PgliteExecutor(dataDir));
  }
}

class PgliteExecutor implements SqlExecutor {
  readonly #dataDir: string;
  #db: Promise<{ db: PGlite; release: () => Promise<void> }> | null = null;
  #closed = false;

  constructor(dataDir: string) {
    this.#dataDir = dataDir;
  }

  async query<T extends object>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    const { db } = await this.#open();
    return (await db.query<T>(text, [...params])).rows;
  }

  async transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T> {
    const { db } = await this.#open();
    return db.transaction((tx) =>
      work({
        query: async <R extends object>(text: string, params: readonly unknown[] = []) =>
          (await tx.query<R>(text, [...params])).rows,
      }),
    );
  }

  async close(): Promise<void> {
    this.#closed = true;
    const opening = this.#db;
    this.#db = null;
    if (opening === null) return;
    const opened = await opening.catch(() => null);
    if (opened === null) return;
    try {
      await opened.db.close();
    } finally {
      await opened.release();
    }
  }

  // Opened on first use: the CLI builds the store at start-up, and initialising PGlite (WASM,
  // and initdb the first time) is work a run should not wait for.
  #open(): Promise<{ db: PGlite; release: () => Promise<void> }> {
    if (this.#closed)
      return Promise.reject(new Error(`The embedded control database ${this.#dataDir} is closed.`));
    if (this.#db === null) {
      const opening = openPglite(this.#dataDir);
      // A failed open (directory not writable, lock held) is retried on the next call.
      opening.catch(() => {
        if (this.#db === opening) this.#db = null;
      });
      this.#db = opening;
    }
    return this.#db;
  }
}

async function openPglite(dataDir: string): Promise<{ db: PGlite; release: () => Promise<void> }> {
  const release = await acquireLock(`${dataDir}.lock`);
  try {
    // Loaded on demand, so a process that uses a Postgres server never loads the WASM build.
    const { PGlite } = await import('@electric-sql/pglite');
    const db = await PGlite.create(dataDir);
    return { db, release };
  } catch (error) {
    await release();
    throw error;
  }
}

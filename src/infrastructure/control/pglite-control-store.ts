import { Worker } from 'node:worker_threads';
import { acquireLock } from './dir-lock.ts';
import { ensureDataDir } from './pglite-data-dir.ts';
import type { SqlExecutor, SqlQuery } from './sql-executor.ts';
import { SqlControlStore } from './sql-control-store.ts';

/**
 * The embedded control plane: PGlite (Postgres in WASM) in a data directory under the runs
 * directory, so a user with no database server still gets history and exports.
 */
export class PgliteControlStore extends SqlControlStore {
  /** `cacheDir`: where a new data directory's initdb output is kept and reused (null: nowhere). */
  constructor(dataDir: string, options: { readonly cacheDir?: string | null } = {}) {
    super('pglite', dataDir, new PgliteExecutor(dataDir, options.cacheDir ?? null));
  }
}

/**
 * Runs PGlite in a worker thread (see pglite-worker.mjs for why). Statements are serialised:
 * PGlite has one connection, so a transaction is BEGIN … COMMIT with nothing interleaved.
 */
class PgliteExecutor implements SqlExecutor {
  readonly #dataDir: string;
  #worker: Promise<{ worker: Worker; release: () => Promise<void> }> | null = null;
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  readonly #pending = new Map<
    number,
    { resolve: (rows: unknown[]) => void; reject: (error: Error) => void }
  >();
  #closed = false;
  readonly #initializing = new AbortController();
  readonly #cacheDir: string | null;

  constructor(dataDir: string, cacheDir: string | null) {
    this.#dataDir = dataDir;
    this.#cacheDir = cacheDir;
  }

  query<T extends object>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.#serial(() => this.#send('query', text, params)) as Promise<T[]>;
  }

  transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T> {
    return this.#serial(async () => {
      await this.#send('query', 'begin');
      const tx: SqlQuery = {
        query: async <R extends object>(text: string, params: readonly unknown[] = []) =>
          (await this.#send('query', text, params)) as R[],
      };
      try {
        const result = await work(tx);
        await this.#send('query', 'commit');
        return result;
      } catch (error) {
        await this.#send('query', 'rollback').catch(() => {});
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    // A data directory still being created is given up: the process is going away.
    this.#initializing.abort();
    const starting = this.#worker;
    this.#worker = null;
    if (starting === null) return;
    const started = await starting.catch(() => null);
    if (started === null) return;
    try {
      await this.#queue.catch(() => {});
      await this.#post(started.worker, 'close').catch(() => {});
      await started.worker.terminate();
    } finally {
      await started.release();
    }
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(work, work);
    this.#queue = next.catch(() => {});
    return next;
  }

  async #send(op: 'query', text: string, params: readonly unknown[] = []): Promise<unknown[]> {
    const { worker } = await this.#start();
    return this.#post(worker, op, text, params);
  }

  #post(
    worker: Worker,
    op: 'query' | 'close',
    text?: string,
    params?: readonly unknown[],
  ): Promise<unknown[]> {
    const id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      // Held open while it has work, so an awaited write finishes; never after (see #spawn).
      if (this.#pending.size === 1) worker.ref();
      worker.postMessage({ id, op, text, params: params === undefined ? undefined : [...params] });
    });
  }

  // Started on first use: the CLI builds the store at start-up, and a run must not wait for it.
  #start(): Promise<{ worker: Worker; release: () => Promise<void> }> {
    if (this.#closed) {
      return Promise.reject(new Error(`The embedded control database ${this.#dataDir} is closed.`));
    }
    if (this.#worker === null) {
      const starting = this.#spawn();
      // A failed start (directory not writable, lock held) is retried on the next call.
      starting.catch(() => {
        if (this.#worker === starting) this.#worker = null;
      });
      this.#worker = starting;
    }
    return this.#worker;
  }

  async #spawn(): Promise<{ worker: Worker; release: () => Promise<void> }> {
    const release = await acquireLock(`${this.#dataDir}.lock`);
    try {
      await ensureDataDir(this.#dataDir, { signal: this.#initializing.signal, cacheDir: this.#cacheDir });
    } catch (error) {
      await release();
      throw error;
    }
    try {
      const worker = new Worker(new URL('./pglite-worker.mjs', import.meta.url), {
        workerData: { dataDir: this.#dataDir },
      });
      // The worker must never keep a finished process alive. A 'message' listener refs the
      // worker again, so it is unref'd after the listener is added, and ref'd only while
      // requests are pending (#post).
      worker.on('message', (message: WorkerReply) => {
        const pending = this.#pending.get(message.id);
        if (!pending) return;
        this.#pending.delete(message.id);
        if (this.#pending.size === 0) worker.unref();
        if (message.ok) pending.resolve(message.rows ?? []);
        else
          pending.reject(
            Object.assign(new Error(message.error?.message ?? 'PGlite failed'), {
              code: message.error?.code,
            }),
          );
      });
      worker.on('error', (error) => this.#failAll(error));
      worker.on('exit', () => this.#failAll(new Error('The embedded control database worker stopped.')));
      worker.unref();
      return { worker, release };
    } catch (error) {
      await release();
      throw error;
    }
  }

  #failAll(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

interface WorkerReply {
  readonly id: number;
  readonly ok: boolean;
  readonly rows?: unknown[];
  readonly error?: { readonly message: string; readonly code?: string };
}

import { connect, type Socket } from 'node:net';
import postgres from 'postgres';
import type { SqlExecutor, SqlQuery } from './sql-executor.ts';
import { SqlControlStore } from './sql-control-store.ts';

/** Connection settings for the Postgres control store. */
export interface PostgresControlStoreOptions {
  /** Seconds to wait for a connection; short, because a mirror must not hang on a dead server. */
  readonly connectTimeoutS?: number;
  /** Pool size for reads (transactions have one connection of their own). */
  readonly maxConnections?: number;
  /**
   * Bound of one call, connecting included: a query, or a whole transaction. A server that is
   * cut off or stops answering makes the call reject after this at the latest. Default 5 000.
   */
  readonly timeoutMs?: number;
}

/** The control plane on a Postgres server (`FABRIC_DSN` or `control.dsn`), through `postgres`. */
export class PostgresControlStore extends SqlControlStore {
  constructor(dsn: string, options: PostgresControlStoreOptions = {}) {
    super('postgres', redactDsn(dsn), new PostgresExecutor(dsn, options));
  }
}

/** The DSN with its password masked, fit for messages and `fabric control` output. */
export function redactDsn(dsn: string): string {
  try {
    const url = new URL(dsn);
    if (url.password !== '') url.password = '***';
    return url.toString();
  } catch {
    return 'postgres (unparsable DSN)';
  }
}

/** Why a call to the control database failed without the server saying so. */
export type ControlConnectionErrorCode = 'connection_lost' | 'timeout' | 'closed';

/** The control database was unreachable, cut off, or silent past the bound; the next call reconnects. */
export class ControlConnectionError extends Error {
  readonly code: ControlConnectionErrorCode;

  constructor(code: ControlConnectionErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ControlConnectionError';
    this.code = code;
  }
}

/*
 * Why this executor never uses `sql.begin()` or `sql.reserve()` (a guard in our code, rather than
 * a patch or a pin): in `postgres` 3.4.9 a transaction's queries go straight to its reserved
 * connection, also after that connection closed and its socket was nulled; the write is then
 * flushed from a `setImmediate` and throws `Cannot read properties of null (reading 'write')`,
 * an uncaught exception no `await` can catch (porsager/postgres#1208, #1066, #1154; the open
 * fixes #1168 and #1209 are not released, and a patch of node_modules would not reach users who
 * install this package). The pool's own path only writes to connections that are open. So:
 * - a transaction is `begin` … `commit` sent as plain queries through a pool of exactly one
 *   connection, used by one transaction at a time, and it refuses to go on once that connection
 *   has closed (its next query would reconnect and run outside the transaction);
 * - every call has a deadline, and a pool that failed (cut, refused, silent) is thrown away
 *   whole, sockets destroyed, and rebuilt on the next call: a connection closed with a write
 *   pending is left unable to send again (LanternOps/breeze#3225), and a pool keeps its
 *   reconnect backoff;
 * - `fetch_types` is off: our statements use no array types, and every (re)connect is one
 *   round trip shorter.
 */
export class PostgresExecutor implements SqlExecutor {
  readonly #dsn: string;
  readonly #location: string;
  readonly #max: number;
  readonly #connectTimeoutS: number;
  readonly #timeoutMs: number;
  #reads: Pool | null;
  #writes: Pool | null = null;
  /** Transactions run one after another: each settles (or times out) before the next starts. */
  #turn: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(dsn: string, options: PostgresControlStoreOptions) {
    this.#dsn = dsn;
    this.#location = redactDsn(dsn);
    this.#max = options.maxConnections ?? 3;
    this.#timeoutMs = options.timeoutMs ?? 5_000;
    this.#connectTimeoutS = Math.min(options.connectTimeoutS ?? 5, this.#timeoutMs / 1000);
    // Built now so that a malformed DSN fails here; a pool connects lazily, so building the
    // store never touches the network.
    this.#reads = this.#pool(this.#max);
  }

  query<T extends object>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    let pool: Pool | null = null;
    return this.#bounded(
      () => pool,
      async () => {
        pool = this.#reads = live(this.#reads) ?? this.#pool(this.#max);
        return run<T>(pool.sql, text, params);
      },
    );
  }

  transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T> {
    let pool: Pool | null = null;
    let expired = false;
    const settled = this.#bounded(
      () => pool,
      () =>
        this.#turn.then(() => {
          if (expired) throw new ControlConnectionError('timeout', 'The transaction never started.');
          pool = this.#writes = live(this.#writes) ?? this.#pool(1);
          return transact(pool, work);
        }),
      () => {
        expired = true;
      },
    );
    this.#turn = settled.catch(() => {});
    return settled;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const pools = [this.#reads, this.#writes];
    this.#reads = this.#writes = null;
    await Promise.all(pools.map((pool) => pool?.end(2)));
  }

  #pool(max: number): Pool {
    if (this.#closed)
      throw new ControlConnectionError('closed', `The control store ${this.#location} is closed.`);
    return new Pool(this.#dsn, max, this.#connectTimeoutS);
  }

  #retire(pool: Pool | null): void {
    if (pool === null) return;
    if (this.#reads === pool) this.#reads = null;
    if (this.#writes === pool) this.#writes = null;
    pool.retire();
  }

  /** Runs `work` under the deadline; a connection-level failure retires the pool it used. */
  async #bounded<T>(used: () => Pool | null, work: () => Promise<T>, onTimeout?: () => void): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        onTimeout?.();
        this.#retire(used());
        reject(
          new ControlConnectionError(
            'timeout',
            `The control database at ${this.#location} did not answer within ${this.#timeoutMs} ms; ` +
              'the connection was dropped and the next call reconnects.',
          ),
        );
      }, this.#timeoutMs);
    });
    try {
      return await Promise.race([work(), deadline]);
    } catch (error) {
      if (isStatementError(error)) throw error;
      this.#retire(used());
      // Ours are explained already; our own bugs (no `code`) are not dressed up as network trouble.
      if (error instanceof ControlConnectionError) throw error;
      if (!(error instanceof Error) || typeof (error as { code?: unknown }).code !== 'string') throw error;
      throw new ControlConnectionError(
        'connection_lost',
        `The control database at ${this.#location} is unreachable or dropped the connection ` +
          `(${error.message}); the next call reconnects.`,
        { cause: error },
      );
    } finally {
      clearTimeout(timer);
    }
  }
}

/** `begin` … `commit` on a one-connection pool, refusing to continue on another connection. */
async function transact<T>(pool: Pool, work: (tx: SqlQuery) => Promise<T>): Promise<T> {
  const closes = pool.closes;
  let open = true;
  const intact = () => open && !pool.retired && pool.closes === closes;
  const check = () => {
    if (intact()) return;
    throw new ControlConnectionError(
      'connection_lost',
      'The connection closed inside a transaction, so the server rolled it back.',
    );
  };
  await pool.sql.unsafe('begin');
  try {
    const result = await work({
      query: async <R extends object>(text: string, params: readonly unknown[] = []) => {
        check();
        return run<R>(pool.sql, text, params);
      },
    });
    check();
    await pool.sql.unsafe('commit');
    return result;
  } catch (error) {
    // A statement failed on a live connection: roll back, so the next transaction starts clean.
    if (intact()) await pool.sql.unsafe('rollback').catch(() => pool.retire());
    throw error;
  } finally {
    open = false;
  }
}

/** The pool unless it was retired (a failed rollback retires it from inside a transaction). */
function live(pool: Pool | null): Pool | null {
  return pool === null || pool.retired ? null : pool;
}

/** A server's own error about a statement: the connection is still good. */
function isStatementError(error: unknown): boolean {
  // 08: connection exceptions; 57P0x: the server shutting down or not yet accepting connections.
  return error instanceof postgres.PostgresError && !/^(08|57P0)/.test(error.code);
}

/** What `postgres` hands the `socket` option: its parsed connection options. */
interface SocketTarget {
  readonly host: readonly string[];
  readonly port: readonly number[];
  readonly path?: string | false;
}

/** One `postgres()` instance and the sockets it opened, so that it can be thrown away whole. */
class Pool {
  readonly sql: postgres.Sql;
  /** Connections of this pool that have closed: a transaction must end where it began. */
  closes = 0;
  #retired = false;
  #attempts = 0;
  readonly #sockets = new Set<Socket>();

  constructor(dsn: string, max: number, connectTimeoutS: number) {
    const options = {
      max,
      connect_timeout: connectTimeoutS,
      idle_timeout: 30,
      fetch_types: false,
      // `create ... if not exists` raises notices; the default handler would print them.
      onnotice: () => {},
      connection: { application_name: 'agent-fabric' },
      onclose: () => {
        this.closes += 1;
      },
      // Documented (README, "Custom socket") but missing from the type definitions.
      socket: (target: SocketTarget) => this.#open(target),
    };
    this.sql = postgres(dsn, options);
  }

  get retired(): boolean {
    return this.#retired;
  }

  /** Ends now: pending queries reject, sockets are destroyed, and no connection is opened again. */
  retire(): void {
    if (this.#retired) return;
    this.#retired = true;
    this.sql.end({ timeout: 0 }).catch(() => {});
    for (const socket of this.#sockets) socket.destroy();
  }

  /** Ends gracefully, waiting `timeoutS` at most for queries in flight. */
  async end(timeoutS: number): Promise<void> {
    await this.sql.end({ timeout: timeoutS }).catch(() => {});
    this.retire();
  }

  #open(target: SocketTarget): Socket {
    // A retired pool's connection may still try to reconnect (the driver retries a start-up
    // that was cut); it must not reach the network. The driver rejects its query with this.
    if (this.#retired) throw new Error('The control database connection was dropped.');
    const index = this.#attempts++ % Math.max(1, target.host.length);
    const host = target.host[index] ?? 'localhost';
    const socket =
      typeof target.path === 'string' && target.path !== ''
        ? connect(target.path)
        : connect(target.port[index] ?? target.port[0] ?? 5432, host);
    // Read by the driver for TLS server names, as on the sockets it makes itself.
    Object.assign(socket, { host });
    // The driver listens for errors only once it has the socket, a few ticks later.
    socket.on('error', () => {});
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
    return socket;
  }
}

type Params = postgres.ParameterOrJSON<never>[];

// `unsafe` here means "not a tagged template": the text is a constant of this folder and the
// values still travel as bind parameters of a prepared statement.
async function run<T extends object>(
  sql: postgres.Sql,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  const rows = await sql.unsafe(text, [...params] as Params);
  return [...rows] as unknown as T[];
}

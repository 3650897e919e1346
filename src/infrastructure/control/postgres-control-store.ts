import postgres from 'postgres';
import type { SqlExecutor, SqlQuery } from './sql-executor.ts';
import { SqlControlStore } from './sql-control-store.ts';

/** Connection settings for the Postgres control store. */
export interface PostgresControlStoreOptions {
  /** Seconds to wait for a connection; short, because a mirror must not hang on a dead server. */
  readonly connectTimeoutS?: number;
  /** Pool size. The mirror writes one batch at a time, so a small pool is plenty. */
  readonly maxConnections?: number;
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

type Params = postgres.ParameterOrJSON<never>[];

/** The `SqlExecutor` over a `postgres` pool; exported for the migration tests. */
export class PostgresExecutor implements SqlExecutor {
  readonly #sql: postgres.Sql;
  /** Set after a connection-level failure: `end()` then waits its whole timeout for a dead socket. */
  #broken = false;

  constructor(dsn: string, options: PostgresControlStoreOptions) {
    // The pool connects lazily: building the store never touches the network.
    this.#sql = postgres(dsn, {
      max: options.maxConnections ?? 3,
      connect_timeout: options.connectTimeoutS ?? 5,
      idle_timeout: 30,
      // `create ... if not exists` raises notices; the default handler would print them.
      onnotice: () => {},
      connection: { application_name: 'agent-fabric' },
    });
  }

  query<T extends object>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.#watch(run<T>(this.#sql, text, params));
  }

  async transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T> {
    const result = await this.#watch(
      this.#sql.begin((tx) =>
        work({
          query: <R extends object>(text: string, params: readonly unknown[] = []) =>
            run<R>(tx, text, params),
        }),
      ),
    );
    return result as T;
  }

  close(): Promise<void> {
    return this.#sql.end({ timeout: this.#broken ? 0 : 2 });
  }

  async #watch<T>(pending: Promise<T>): Promise<T> {
    try {
      return await pending;
    } catch (error) {
      // A server's own errors (PostgresError, with a SQLSTATE) leave the connection usable.
      if (!(error instanceof postgres.PostgresError)) this.#broken = true;
      throw error;
    }
  }
}

// `unsafe` here means "not a tagged template": the text is a constant of this folder and the
// values still travel as bind parameters of a prepared statement.
async function run<T extends object>(
  sql: postgres.Sql | postgres.TransactionSql,
  text: string,
  params: readonly unknown[],
): Promise<T[]> {
  const rows = await sql.unsafe(text, [...params] as Params);
  return [...rows] as unknown as T[];
}

/**
 * The one query interface both control adapters implement, so every statement is written once:
 * plain SQL with `$1` parameters, run by `postgres` (`sql.unsafe(text, params)`, still a
 * parameterised prepared statement) or by PGlite (`db.query(text, params)`).
 */

/** Runs one parameterised statement and returns its rows. */
export interface SqlQuery {
  query<T extends object>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/**
 * A connection (or pool) that can also run a function in a transaction and be closed. When the
 * database goes away, a call rejects (in bounded time, for a server): it never hangs, and never
 * throws outside the promise it returned.
 */
export interface SqlExecutor extends SqlQuery {
  transaction<T>(work: (tx: SqlQuery) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

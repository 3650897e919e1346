/** A throwaway Postgres database for a bench: created at start, dropped at the end. */
import postgres from 'postgres';

/** The server; its `postgres` database is used to create and drop the bench's own. */
export const PG_SERVER = process.env.FABRIC_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';

export interface ThrowawayDb {
  readonly dsn: string;
  /** The connections open to this database now, by application_name (the admin's are elsewhere). */
  connections(): Promise<Record<string, number>>;
  drop(): Promise<void>;
}

/** Creates `fabric_bench_<time>`; null (with the reason printed) when the server is not reachable. */
export async function createThrowawayDb(): Promise<ThrowawayDb | null> {
  const name = `fabric_bench_${Date.now()}_${process.pid}`;
  const admin = postgres(`${PG_SERVER}/postgres`, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  try {
    await admin.unsafe(`create database ${name}`);
  } catch (error) {
    await admin.end().catch(() => {});
    console.log(`  (Postgres at ${PG_SERVER} not reachable, its rows are left out: ${String(error)})`);
    return null;
  }
  return {
    dsn: `${PG_SERVER}/${name}`,
    connections: async () => {
      const rows = await admin<{ app: string; n: number }[]>`
        select coalesce(nullif(application_name, ''), '(none)') as app, count(*)::int as n
        from pg_stat_activity where datname = ${name} group by 1 order by 1`;
      return Object.fromEntries(rows.map((row) => [row.app, row.n]));
    },
    drop: async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

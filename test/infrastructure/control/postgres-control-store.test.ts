import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlMirror } from '../../../src/infrastructure/control/control-mirror.ts';
import {
  applyMigrations,
  MIGRATIONS,
  SCHEMA_VERSION,
} from '../../../src/infrastructure/control/migrations.ts';
import {
  PostgresControlStore,
  PostgresExecutor,
  redactDsn,
} from '../../../src/infrastructure/control/postgres-control-store.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { type ControlStoreHarness, controlStoreContract } from './control-store-contract.ts';
import { succeededRun, tempRunsDir, writeRunlog } from './fixtures.ts';
import { closedPort, createTestDatabase, startPgProxy, startSilentServer } from './pg-test-db.ts';

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let harness: ControlStoreHarness;

beforeAll(async () => {
  database = await createTestDatabase();
  const dsn = new URL(database.dsn);
  const unreachable = new URL(database.dsn);
  unreachable.port = String(await closedPort());
  harness = {
    open: async () => new PostgresControlStore(database.dsn),
    openUnreachable: () => new PostgresControlStore(unreachable.toString()),
    async openInterruptible() {
      const proxy = await startPgProxy(dsn);
      const through = new URL(database.dsn);
      through.port = String(proxy.port);
      return { store: new PostgresControlStore(through.toString()), interrupt: () => proxy.close() };
    },
  };
});

afterAll(async () => {
  await database?.drop();
});

controlStoreContract('Postgres', () => harness);

describe('PostgresControlStore', () => {
  it('masks the password of the DSN it reports', () => {
    expect(redactDsn('postgres://fabric:s3cret@db.local:5432/fabric')).toBe(
      'postgres://fabric:***@db.local:5432/fabric',
    );
    expect(new PostgresControlStore('postgres://u:p@127.0.0.1:1/x').location).not.toContain(':p@');
  });

  it('lets a first writer write on a database never migrated: the schema is made first', async () => {
    const fresh = await createTestDatabase();
    const store = new PostgresControlStore(fresh.dsn);
    try {
      const events = await writeRunlog(
        await tempRunsDir(),
        'first-writer',
        '2029-05-01T10:00:00Z',
        succeededRun(),
      );
      // No migrate() call: the daemon and a battery write their rows before any run is mirrored.
      await expect(store.write({ events, modelCalls: [] })).resolves.toMatchObject({ events: events.length });
      expect((await store.mirroredRuns()).get('first-writer')).toMatchObject({ complete: true });
    } finally {
      await store.close();
      await fresh.drop();
    }
  });

  it('bounds flush() when the server accepts connections and never answers', async () => {
    const silent = await startSilentServer();
    const store = new PostgresControlStore(`postgres://postgres@127.0.0.1:${silent.port}/test`, {
      connectTimeoutS: 30,
    });
    const mirror = new ControlMirror(store, { flushTimeoutMs: 300 });
    const events = await writeRunlog(
      await tempRunsDir(),
      'hanging-run',
      '2029-02-01T10:00:00Z',
      succeededRun(),
    );
    for (const event of events) mirror.onEvent(event);
    const started = Date.now();
    await mirror.close();
    expect(Date.now() - started).toBeLessThan(2_000);
    await silent.close();
    await store.close().catch(() => {});
  });
});

describe('PostgresExecutor', () => {
  it('never runs the rest of a transaction on a new connection once its own has closed', async () => {
    const url = new URL(database.dsn);
    const target = { host: url.hostname, port: Number(url.port || 5432) };
    const first = await startTcpProxy({ target });
    url.port = String(first.port);
    const db = new PostgresExecutor(url.toString(), { timeoutMs: 5_000 });
    let back: Awaited<ReturnType<typeof startTcpProxy>> | undefined;
    try {
      await db.query('create table tx_guard (n integer)');
      const outcome = db.transaction(async (tx) => {
        await tx.query('insert into tx_guard values (1)');
        // Between two statements the connection goes away, and the server is back at once: the
        // pool would reconnect, and the second insert would commit on its own, half a transaction.
        await first.close();
        back = await startTcpProxy({ target, port: first.port });
        await new Promise((resolve) => setTimeout(resolve, 100));
        await tx.query('insert into tx_guard values (2)');
      });
      await expect(outcome).rejects.toMatchObject({ code: 'connection_lost' });
      expect(await db.query('select n from tx_guard')).toEqual([]);
    } finally {
      await db.close();
      await back?.close();
    }
  });

  it('rejects calls after close instead of reconnecting', async () => {
    const db = new PostgresExecutor(database.dsn, {});
    await db.query('select 1');
    await db.close();
    await expect(db.query('select 1')).rejects.toMatchObject({ code: 'closed' });
    await expect(db.transaction(async () => 1)).rejects.toMatchObject({ code: 'closed' });
  });
});

describe('applyMigrations', () => {
  it('applies each migration in a transaction: a failing one leaves no trace', async () => {
    const db = new PostgresExecutor(database.dsn, {});
    try {
      const broken = {
        version: 1000,
        name: 'broken',
        statements: ['create table control.half_done (a int)', 'select nope'],
      };
      await expect(applyMigrations(db, [...MIGRATIONS, broken])).rejects.toThrow(/nope/);
      const tables = await db.query<{ n: number }>(
        "select count(*)::integer as n from information_schema.tables where table_schema = 'control' and table_name = 'half_done'",
      );
      expect(tables).toEqual([{ n: 0 }]);
      expect(await applyMigrations(db)).toEqual({ applied: [], version: SCHEMA_VERSION });
      const versions = await db.query<{ version: number }>(
        'select version from control.schema_migrations order by version',
      );
      expect(versions.map((row) => row.version)).toEqual(MIGRATIONS.map((m) => m.version));
    } finally {
      await db.close();
    }
  });

  it('lets concurrent migrators queue on a lock instead of failing', async () => {
    const fresh = await createTestDatabase();
    const stores = [new PostgresControlStore(fresh.dsn), new PostgresControlStore(fresh.dsn)];
    try {
      const reports = await Promise.all(stores.map((store) => store.migrate()));
      expect(reports.flatMap((report) => report.applied).sort((a, b) => a - b)).toEqual(
        MIGRATIONS.map((m) => m.version),
      );
    } finally {
      for (const store of stores) await store.close();
      await fresh.drop();
    }
  });
});

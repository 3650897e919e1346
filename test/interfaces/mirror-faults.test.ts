import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { PostgresControlStore } from '../../src/infrastructure/control/postgres-control-store.ts';
import { syncRunlogs } from '../../src/infrastructure/control/sync.ts';
import { FileRunLogStore } from '../../src/infrastructure/runlog/file-run-log-store.ts';
import { createFabric } from '../../src/composition/fabric.ts';
import { type Sandbox, makeSandbox, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { type Fault, type Traffic, seededFault, startTcpProxy } from '../support/tcp-proxy.ts';
import { createTestDatabase } from '../infrastructure/control/pg-test-db.ts';

// Issue 11: a fault of the control database at any moment of a run — refused, cut while
// connecting, migrating or writing, cut while the answer comes back, stalled — never ends the
// run or the process; the run is told once; sync restores every row. A real TCP proxy between
// the fabric and the real Postgres cuts at seeded points of a measured healthy run.

const SEEDS = (process.env.FABRIC_FAULT_SEEDS ?? '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16')
  .split(',')
  .map(Number);

const convert: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 5, from: 'km', to: 'm' } }] },
  delayMs: 15,
};
const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '5000 m' } }] },
  delayMs: 15,
};

describe('the control mirror under a connection that fails at any moment of a run', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let total: Traffic;
  const uncaught: unknown[] = [];
  const onUncaught = (error: unknown) => uncaught.push(error);
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;

  /** One run of five steps through a fabric whose control DSN goes through a proxy with `fault`. */
  async function runThroughProxy(fault?: Fault) {
    const target = new URL(db.dsn);
    const proxy = await startTcpProxy({
      target: { host: target.hostname, port: Number(target.port || 5432) },
      ...(fault === undefined ? {} : { fault }),
    });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'm', toolUse: true }],
      script: [convert, convert, convert, convert, finish],
    });
    sandbox = await makeSandbox({ control: { enabled: true } });
    const dsn = `postgres://postgres@127.0.0.1:${proxy.port}/${db.name}`;
    const config = await loadConfig({
      configPath: sandbox.configPath,
      cwd: sandbox.dir,
      env: testEnv(sandbox, llm.url, { FABRIC_DSN: dsn }),
    });
    const fabric = createFabric(config);
    const notices: string[] = [];
    try {
      const result = await fabric.run({
        specialist: 'units',
        task: 'Convert 5 km',
        onNotice: (message) => notices.push(message),
        signal: new AbortController().signal,
      });
      await fabric.close();
      return { result, notices, traffic: proxy.traffic, fired: proxy.fired, runsDir: sandbox.runsDir };
    } finally {
      await proxy.close();
    }
  }

  beforeAll(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    db = await createTestDatabase();
    // Each run starts on a schema already migrated, as the measured one does (its check that
    // migrations are done is part of the conversation).
    const direct = new PostgresControlStore(db.dsn);
    await direct.migrate();
    await direct.close();
    // A healthy run measures the conversation the faults are placed in.
    const healthy = await runThroughProxy();
    expect(healthy.result.status).toBe('succeeded');
    expect(healthy.notices).toEqual([]);
    total = healthy.traffic;
    await llm?.stop();
    await sandbox?.cleanup();
    llm = undefined;
    sandbox = undefined;
  });

  afterEach(async () => {
    await llm?.stop();
    await sandbox?.cleanup();
    llm = undefined;
    sandbox = undefined;
  });

  const fired: boolean[] = [];

  afterAll(async () => {
    // The points are inside the measured conversation: nearly every fault must have fired.
    expect(fired.filter(Boolean).length).toBeGreaterThanOrEqual(Math.ceil(fired.length * 0.75));
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUncaught);
    await db.drop();
  });

  const zero: Traffic = { to_server: { bytes: 0, chunks: 0 }, to_client: { bytes: 0, chunks: 0 } };

  it.each(SEEDS)(
    'seed %i: the run succeeds, is told at most once, and sync restores every row',
    async (seed) => {
      const fault = seededFault(seed, zero, total);
      const { result, notices, runsDir, fired: didFire } = await runThroughProxy(fault);
      fired.push(didFire);
      expect(result.status, JSON.stringify(fault)).toBe('succeeded');
      expect(notices.length, JSON.stringify({ fault, notices })).toBeLessThanOrEqual(1);
      for (const notice of notices) expect(notice).toMatch(/db_off/);

      const store = new PostgresControlStore(db.dsn);
      try {
        const runLogs = new FileRunLogStore(runsDir);
        const { events } = await runLogs.read(result.run_id);
        const before = (await store.mirroredRuns()).get(result.run_id)?.events ?? 0;
        // Rows went missing only if the run was told so.
        if (before < events.length) expect(notices, JSON.stringify(fault)).toHaveLength(1);
        await syncRunlogs(store, runLogs);
        const after = (await store.mirroredRuns()).get(result.run_id);
        expect(after).toMatchObject({ events: events.length, status: 'succeeded' });
        expect((await store.modelCalls(result.run_id)).length).toBe(5);
      } finally {
        await store.close();
      }
      expect(uncaught).toEqual([]);
    },
  );
});

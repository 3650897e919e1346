import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ControlBatch, ControlStore } from '../../../src/application/control/control-ports.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { ModelCallTracker } from '../../../src/infrastructure/control/model-calls.ts';
import { PostgresControlStore } from '../../../src/infrastructure/control/postgres-control-store.ts';
import { syncRunlogs } from '../../../src/infrastructure/control/sync.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import {
  type Fault,
  seededFault,
  startTcpProxy,
  type TcpProxy,
  type Traffic,
} from '../../support/tcp-proxy.ts';
import { lacksToolsRun, succeededRun, tempRunsDir, unavailableRun, writeRunlog } from './fixtures.ts';
import { closedPort, createTestDatabase, startHangUpServer, startSilentServer } from './pg-test-db.ts';

// The store's bound in these tests: a call rejects after this at the latest.
const BOUND_MS = 600;
// Seeded cut points, spread evenly over the phases of the conversation. To replay one that
// failed: FABRIC_FAULT_SEEDS=17 npx vitest run <this file> -t seeded
const SEEDS =
  process.env.FABRIC_FAULT_SEEDS?.split(',').map(Number) ?? Array.from({ length: 40 }, (_, i) => i + 1);
// A call still pending this long after it started is hung: the bug these tests exist for.
const HUNG_MS = 5_000;

type Outcome =
  | { readonly call: string; readonly result: 'ok' }
  | { readonly call: string; readonly result: 'rejected'; readonly error: unknown }
  | { readonly call: string; readonly result: 'hung' };

/** Settles a store call into an outcome; a call that outlives `HUNG_MS` is reported hung. */
async function settle(call: string, pending: Promise<unknown>): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hung = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ call, result: 'hung' }), HUNG_MS);
  });
  try {
    return await Promise.race([
      pending.then(
        (): Outcome => ({ call, result: 'ok' }),
        (error: unknown): Outcome => ({ call, result: 'rejected', error }),
      ),
      hung,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// An uncaught exception thrown from a timer of the driver (porsager/postgres#1208) would kill a
// real process; here a listener records it, so the test can say so instead of dying.
const uncaught: unknown[] = [];
const recordUncaught = (error: unknown) => uncaught.push(error);

let database: Awaited<ReturnType<typeof createTestDatabase>>;
let admin: postgres.Sql;
let target: { host: string; port: number };
let runsDir: string;
let runs: { id: string; events: RunEvent[] }[];
let batches: ControlBatch[];
const stores: ControlStore[] = [];
const proxies: TcpProxy[] = [];

function dsnThrough(port: number): string {
  const url = new URL(database.dsn);
  url.port = String(port);
  return url.toString();
}

function openStore(port: number): ControlStore {
  const store = new PostgresControlStore(dsnThrough(port), { timeoutMs: BOUND_MS });
  stores.push(store);
  return store;
}

async function proxy(options: Omit<Parameters<typeof startTcpProxy>[0], 'target'> = {}): Promise<TcpProxy> {
  const started = await startTcpProxy({ target, ...options });
  proxies.push(started);
  return started;
}

beforeAll(async () => {
  process.on('uncaughtException', recordUncaught);
  process.on('unhandledRejection', recordUncaught);
  database = await createTestDatabase();
  admin = postgres(database.dsn, { max: 1, onnotice: () => {} });
  const url = new URL(database.dsn);
  target = { host: url.hostname, port: Number(url.port || 5432) };
  runsDir = await tempRunsDir();
  runs = [];
  for (const [label, start, inputs] of [
    ['ok', '2034-01-01T10:00:00Z', succeededRun()],
    ['down', '2034-01-01T11:00:00Z', unavailableRun()],
    ['lacks', '2034-01-01T12:00:00Z', lacksToolsRun()],
  ] as const) {
    const id = `20340101T000000Z-fault-${label}`;
    runs.push({ id, events: await writeRunlog(runsDir, id, start, inputs) });
  }
  // Batches the way the mirror cuts them: runs interleaved, a run's start and end in different
  // batches, each event with the model call derived from it.
  const tracker = new ModelCallTracker();
  const all = runs.flatMap((run) => run.events).map((event) => ({ event, call: tracker.observe(event) }));
  batches = [];
  for (let start = 0; start < all.length; start += 8) {
    const slice = all.slice(start, start + 8);
    batches.push({
      events: slice.map((item) => item.event),
      modelCalls: slice.flatMap((item) => (item.call === null ? [] : [item.call])),
    });
  }
});

afterEach(async () => {
  for (const store of stores.splice(0)) await store.close().catch(() => {});
  for (const started of proxies.splice(0)) await started.close();
  await admin.unsafe('drop schema if exists control cascade');
  expect(uncaught).toEqual([]);
});

afterAll(async () => {
  await admin?.end({ timeout: 2 });
  await database?.drop();
  process.off('uncaughtException', recordUncaught);
  process.off('unhandledRejection', recordUncaught);
});

/** One call of each kind, each started only when the one before has settled. */
function calls(store: ControlStore): (() => Promise<unknown>)[] {
  return [() => store.migrate(), () => store.write(batches[0] as ControlBatch), () => store.mirroredRuns()];
}

type Phase = 'connect' | 'migrate' | 'write' | 'read';

/**
 * The calls a mirror makes, in order: migrate, the batches, then the read `sync` starts with.
 * `mark` is told each phase before it starts, so the traffic can be measured phase by phase.
 */
async function scenario(
  store: ControlStore,
  hooks: { mark?: (phase: Phase) => void; onRejected?: () => void } = {},
): Promise<Outcome[]> {
  const mark = hooks.mark ?? (() => {});
  const outcomes: Outcome[] = [];
  const record = (outcome: Outcome) => {
    outcomes.push(outcome);
    // The database comes back once the call that met the fault has given up.
    if (outcome.result === 'rejected') hooks.onRejected?.();
  };
  mark('migrate');
  record(await settle('migrate', store.migrate()));
  for (const [index, batch] of batches.entries()) {
    mark('write');
    record(await settle(`write #${index + 1}`, store.write(batch)));
  }
  mark('read');
  record(await settle('mirroredRuns', store.mirroredRuns()));
  return outcomes;
}

/** The database holds every event of every runlog exactly once, and every model call. */
async function expectComplete(store: ControlStore): Promise<void> {
  const rows = await admin.unsafe<{ run_id: string; seq: number }[]>(
    'select run_id, seq from control.run_events order by run_id, seq',
  );
  const expected = runs
    .flatMap((run) => run.events.map((event) => ({ run_id: run.id, seq: event.seq })))
    .sort((a, b) => a.run_id.localeCompare(b.run_id) || a.seq - b.seq);
  expect(rows.map((row) => ({ run_id: row.run_id, seq: row.seq }))).toEqual(expected);
  const [calls] = await admin.unsafe<{ n: number }[]>('select count(*)::integer as n from control.agent_run');
  expect(calls?.n).toBe(batches.reduce((sum, batch) => sum + batch.modelCalls.length, 0));
  for (const run of runs) {
    expect(await store.runEvents(run.id)).toEqual(run.events);
    expect((await store.getRun(run.id))?.status).not.toBe('running');
  }
}

/** After the fault, with the database healthy again, the same store works and sync completes. */
async function expectRecovered(store: ControlStore): Promise<void> {
  const report = await syncRunlogs(store, new FileRunLogStore(runsDir));
  expect(report.failed).toEqual([]);
  await expectComplete(store);
  expect(await syncRunlogs(store, new FileRunLogStore(runsDir))).toMatchObject({
    eventsInserted: 0,
    modelCallsInserted: 0,
  });
}

function expectSettled(outcomes: readonly Outcome[]): void {
  expect(outcomes.filter((outcome) => outcome.result === 'hung')).toEqual([]);
  for (const outcome of outcomes) {
    if (outcome.result !== 'rejected') continue;
    expect(outcome.error).toBeInstanceOf(Error);
    expect((outcome.error as Error).message).not.toBe('');
  }
}

/**
 * Where each phase starts and ends in the conversation of a healthy run. `connect` ends with the
 * server's first ReadyForQuery ('Z'), where the driver's start-up exchange is over.
 */
async function measure(): Promise<Record<Phase, { from: Traffic; to: Traffic }>> {
  let firstReady: Traffic | null = null;
  let seen = Buffer.alloc(0);
  const healthy: TcpProxy = await proxy({
    onChunk(direction, connection, chunk) {
      if (firstReady !== null || direction !== 'to_client' || connection !== 1) return;
      seen = Buffer.concat([seen, chunk]);
      for (let at = 0; at + 5 <= seen.length; at += 1 + seen.readUInt32BE(at + 1)) {
        if (seen[at] !== 0x5a) continue;
        const now = healthy.traffic;
        firstReady = { to_server: now.to_server, to_client: now.to_client };
        return;
      }
    },
  });
  const marks: { phase: Phase; at: Traffic }[] = [];
  const store = openStore(healthy.port);
  const outcomes = await scenario(store, { mark: (phase) => marks.push({ phase, at: healthy.traffic }) });
  expect(outcomes.every((outcome) => outcome.result === 'ok')).toBe(true);
  const end = healthy.traffic;
  const startOf = (phase: Phase) => marks.find((mark) => mark.phase === phase)?.at as Traffic;
  const zero: Traffic = { to_server: { bytes: 0, chunks: 0 }, to_client: { bytes: 0, chunks: 0 } };
  expect(firstReady).not.toBeNull();
  const ready = firstReady as unknown as Traffic;
  await store.close();
  await healthy.close();
  await admin.unsafe('drop schema if exists control cascade');
  return {
    connect: { from: zero, to: ready },
    migrate: { from: ready, to: startOf('write') },
    write: { from: startOf('write'), to: startOf('read') },
    read: { from: startOf('read'), to: end },
  };
}

describe('PostgresControlStore under connection faults', () => {
  beforeEach(() => {
    uncaught.length = 0;
  });

  it('survives a cut in the middle of a write transaction (porsager/postgres#1208) and recovers', async () => {
    const phases = await measure();
    // 20 bytes into the server's answers of the first write: past the 17 of its `begin`, so the
    // transaction is open and its statement is being answered.
    const fault: Fault = {
      kind: 'cut_at_byte',
      direction: 'to_client',
      at: phases.write.from.to_client.bytes + 20,
    };
    const faulty = await proxy({ fault });
    const store = openStore(faulty.port);
    const outcomes = await scenario(store);
    expect(faulty.fired).toBe(true);
    expectSettled(outcomes);
    expect(outcomes.find((outcome) => outcome.call === 'write #1')?.result).toBe('rejected');
    expect(uncaught).toEqual([]);
    await expectRecovered(store);
  });

  it('settles every call, and recovers, whatever the seeded cut point', async () => {
    const phases = await measure();
    const order: Phase[] = ['connect', 'migrate', 'write', 'read'];
    const seen = new Set<string>();
    let rejected = 0;
    for (const seed of SEEDS) {
      const phase = order[seed % order.length] as Phase;
      const fault = seededFault(seed, phases[phase].from, phases[phase].to);
      const faulty = await proxy({ fault });
      const store = openStore(faulty.port);
      const outcomes = await scenario(store, { onRejected: () => faulty.heal() });
      faulty.heal();
      const label = `seed ${seed} (${phase}: ${JSON.stringify(fault)})`;
      expect({ label, uncaught }).toEqual({ label, uncaught: [] });
      expect({ label, hung: outcomes.filter((o) => o.result === 'hung') }).toEqual({ label, hung: [] });
      expectSettled(outcomes);
      await expectRecovered(store);
      if (faulty.fired) seen.add(`${phase} ${fault.direction}`);
      if (outcomes.some((outcome) => outcome.result === 'rejected')) rejected += 1;
      for (const open of stores.splice(0)) await open.close();
      for (const started of proxies.splice(0)) await started.close();
      await admin.unsafe('drop schema if exists control cascade');
    }
    if (process.env.FABRIC_FAULT_SEEDS !== undefined) return;
    // The seeds reach every phase in both directions, and most faults make a call fail.
    expect([...seen].sort()).toEqual(
      order.flatMap((phase) => [`${phase} to_client`, `${phase} to_server`]).sort(),
    );
    expect(rejected).toBeGreaterThan(SEEDS.length / 2);
  });

  it('rejects within the bound when the server stalls inside a write, then works once it answers again', async () => {
    const phases = await measure();
    // Inside the first write's transaction, after the answer to its begin.
    const at = phases.write.from.to_client.bytes + 20;
    const stall = await proxy({ fault: { kind: 'stall_at_byte', direction: 'to_client', at } });
    const store = openStore(stall.port);
    expect((await settle('migrate', store.migrate())).result).toBe('ok');
    for (const call of calls(store)) {
      const outcome = await settle('stalled', call());
      expect(outcome.result).toBe('rejected');
      expect(outcome.result === 'rejected' && String(outcome.error)).toMatch(/did not answer within 600 ms/);
    }
    expect(stall.fired).toBe(true);
    stall.heal();
    await expectRecovered(store);
  });

  it('rejects within the bound when every connection is hung up on while it starts', async () => {
    const hangUp = await startHangUpServer();
    try {
      const store = openStore(hangUp.port);
      for (const call of calls(store)) expect((await settle('hang-up', call())).result).toBe('rejected');
    } finally {
      for (const store of stores.splice(0)) await store.close().catch(() => {});
      await hangUp.close();
    }
  });

  it('rejects within the bound when the server accepts connections and never answers', async () => {
    const silent = await startSilentServer();
    try {
      const store = openStore(silent.port);
      for (const call of calls(store)) expect((await settle('silent', call())).result).toBe('rejected');
    } finally {
      for (const store of stores.splice(0)) await store.close().catch(() => {});
      await silent.close();
    }
  });

  it('rejects at once when the port is refused, and the same store works once the server is back', async () => {
    const port = await closedPort();
    const store = openStore(port);
    for (const call of calls(store)) {
      const outcome = await settle('refused', call());
      expect(outcome.result).toBe('rejected');
      expect(outcome.result === 'rejected' && String(outcome.error)).toMatch(/ECONNREFUSED/);
    }
    await proxy({ port });
    await expectRecovered(store);
  });

  it('rejects when the database goes away between calls, and recovers when it is back', async () => {
    const first = await proxy();
    const store = openStore(first.port);
    await store.migrate();
    await store.write(batches[0] as ControlBatch);
    await first.close();
    expect((await settle('gone', store.write(batches[1] as ControlBatch))).result).toBe('rejected');
    expect((await settle('gone', store.mirroredRuns())).result).toBe('rejected');
    await proxy({ port: first.port });
    await expectRecovered(store);
  });
});

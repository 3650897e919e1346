import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEventInput } from '../../../src/domain/run-events.ts';
import { ControlPlane } from '../../../src/infrastructure/control/control-plane.ts';
import { embeddedControlDir } from '../../../src/infrastructure/control/open-control-store.ts';
import { PgliteControlStore } from '../../../src/infrastructure/control/pglite-control-store.ts';
import { PostgresControlStore } from '../../../src/infrastructure/control/postgres-control-store.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import { startTcpProxy } from '../../support/tcp-proxy.ts';
import { succeededRun, tempRunsDir, writeRunlog } from './fixtures.ts';
import { closedPort, createTestDatabase } from './pg-test-db.ts';

/** The pid of a process that has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
  return Number(child.stdout.trim());
}

/** A run that started and never ended, owned by `pid` on this host. */
function unfinishedRun(pid: number): RunEventInput[] {
  const [start, request] = succeededRun();
  return [{ ...(start as Extract<RunEventInput, { kind: 'run_start' }>), pid, host: hostname() }, request!];
}

describe('ControlPlane, the control plane of one process', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let plane: ControlPlane | undefined;
  beforeEach(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await plane?.close();
    plane = undefined;
    await db.drop();
  });

  it('writes the runlogs other processes wrote, at open and as they appear, and marks a dead one interrupted', async () => {
    const runsDir = await tempRunsDir();
    const before = await writeRunlog(runsDir, 'run-before', '2029-04-01T10:00:00Z', succeededRun());
    const store = new PostgresControlStore(db.dsn);
    plane = new ControlPlane(store, new FileRunLogStore(runsDir), {
      backfillOthers: true,
      backfillIntervalMs: 60_000,
    });
    plane.start();
    await plane.backfill();
    expect((await store.mirroredRuns()).get('run-before')).toMatchObject({
      events: before.length,
      status: 'succeeded',
    });

    const later = await writeRunlog(runsDir, 'run-later', '2029-04-01T11:00:00Z', succeededRun());
    await writeRunlog(runsDir, 'run-killed', '2029-04-01T12:00:00Z', unfinishedRun(deadPid()));
    await plane.backfill();
    const held = await store.mirroredRuns();
    expect(held.get('run-later')).toMatchObject({ events: later.length, status: 'succeeded' });
    expect(held.get('run-killed')).toMatchObject({ events: 2, status: 'interrupted' });
  });

  it('writes back from the runlog the rows its own run lost while the database was away, and no one else’s', async () => {
    const runsDir = await tempRunsDir();
    await writeRunlog(runsDir, 'someone-else', '2029-04-02T10:00:00Z', succeededRun());
    const target = new URL(db.dsn);
    const upstream = { host: target.hostname, port: Number(target.port || 5432) };
    let proxy = await startTcpProxy({ target: upstream });
    try {
      const store = new PostgresControlStore(db.dsn.replace(`:${target.port || 5432}/`, `:${proxy.port}/`));
      const notices: string[] = [];
      plane = new ControlPlane(store, new FileRunLogStore(runsDir), {
        backfillOthers: false,
        mirror: { retryAfterMs: 0, writeTimeoutMs: 500 },
      });
      const events = await writeRunlog(runsDir, 'mine', '2029-04-02T11:00:00Z', succeededRun());
      const observer = plane.observe('mine', (message) => notices.push(message));
      // The database stops answering: the write is given up after its bound, the run told once.
      proxy.arm({ kind: 'stall_at_byte', direction: 'to_server', at: 0 });
      for (const event of events) observer.onEvent(event);
      await plane.mirror.flush();
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatch(/db_off/);

      // The stalled connection is cut; the client's reconnect is refused, so the given-up write
      // fails for good; then the database comes back where it was.
      await proxy.close();
      await new Promise((resolve) => setTimeout(resolve, 500));
      proxy = await startTcpProxy({ target: upstream, port: proxy.port });
      expect(await plane.backfill()).toEqual({ runs: 1, events: events.length });
      const direct = new PostgresControlStore(db.dsn);
      try {
        const held = await direct.mirroredRuns();
        expect(held.get('mine')).toMatchObject({ events: events.length, status: 'succeeded' });
        expect(held.has('someone-else')).toBe(false);
      } finally {
        await direct.close();
      }
    } finally {
      await plane?.close();
      plane = undefined;
      await proxy.close();
    }
  });

  it('says once, not every pass, that the backfill cannot reach its store', async () => {
    const runsDir = await tempRunsDir();
    await writeRunlog(runsDir, 'waiting', '2029-04-03T10:00:00Z', succeededRun());
    const down = new PostgresControlStore(`postgres://postgres@127.0.0.1:${await closedPort()}/none`, {
      connectTimeoutS: 1,
    });
    const said: string[] = [];
    plane = new ControlPlane(down, new FileRunLogStore(runsDir), {
      backfillOthers: true,
      onDegraded: (message) => said.push(message),
    });
    for (let pass = 0; pass < 4; pass += 1) await plane.backfill();
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/backfill from the runlogs failed/);
  });
});

describe('ControlPlane on an embedded database another process holds', () => {
  let plane: ControlPlane | undefined;
  let holder: ChildProcess | undefined;
  afterEach(async () => {
    await plane?.close();
    plane = undefined;
    holder?.kill();
    holder = undefined;
  });

  /** A plane on the embedded database of a runs directory with a runlog in it, its lock held by `pid`. */
  async function heldPlane(pid: number, said: string[], notices: string[]) {
    const runsDir = await tempRunsDir();
    await writeRunlog(runsDir, 'theirs', '2029-04-04T10:00:00Z', succeededRun());
    const dataDir = embeddedControlDir(runsDir);
    await mkdir(dirname(dataDir), { recursive: true });
    await writeFile(`${dataDir}.lock`, String(pid));
    plane = new ControlPlane(new PgliteControlStore(dataDir), new FileRunLogStore(runsDir), {
      backfillOthers: true,
      onDegraded: (message) => said.push(message),
      mirror: { retryAfterMs: 0 },
    });
    const events = await writeRunlog(runsDir, 'mine', '2029-04-04T11:00:00Z', succeededRun());
    const observer = plane.observe('mine', (message) => notices.push(message));
    for (const event of events) observer.onEvent(event);
    await plane.mirror.flush();
    await plane.backfill();
    await plane.backfill();
    return dataDir;
  }

  it('says nothing when another live process holds it: that process writes the runs in from their runlogs', async () => {
    holder = spawn('sleep', ['60'], { stdio: 'ignore' });
    const said: string[] = [];
    const notices: string[] = [];
    const dataDir = await heldPlane(holder.pid as number, said, notices);
    expect(said).toEqual([]);
    expect(notices).toEqual([]);
    // Nothing was created beside the holder's database.
    await expect(stat(dataDir)).rejects.toThrow();
  });

  it('says an outage once, in well-formed sentences, when it cannot be opened for another reason', async () => {
    // Held by this very process: not a holder that backfills for it.
    const said: string[] = [];
    const notices: string[] = [];
    await heldPlane(process.pid, said, notices);
    expect(notices).toHaveLength(1);
    expect(said[0]).toBe(notices[0]);
    expect(said[0]).toMatch(
      /^control plane unavailable \(db_off\) at \S+pglite: \S+pglite\.lock is already open in this process\. The run goes on; /,
    );
    expect(said.join('\n')).not.toMatch(/\.\.|control plane: control plane/);
  });
});

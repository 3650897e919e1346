/**
 * Issue 26: runs across machines survive their workers' deaths and partitions. Worker processes
 * reach Postgres through a TCP proxy each (test/support/tcp-proxy.ts), so a test can kill one
 * right after it took a run, or cut it off from the database for longer than `dead_after_s`.
 * Heartbeats are short (0.25 s, dead after 1.5 s) so the file stays fast; nothing here asserts
 * a duration: the figures are printed.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_SERVER_URL, createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { stepsResponder } from '../support/steps-responder.ts';
import { type TcpProxy, seededRandom, startTcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/until.ts';
import { postJson } from './http/http-harness.ts';

const DEAD_AFTER_S = 1.5;
const HEARTBEAT_S = 0.25;

type Proc = ReturnType<typeof spawnFabric>;

describe('leases: runs of dead and cut-off workers end interrupted, and stay so', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: ReturnType<typeof postgres>;
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let server: Proc;
  let url: string;
  const procs: Proc[] = [];
  const proxies: TcpProxy[] = [];
  const logs = new Map<Proc, string>();

  const start = (args: string[], name: string, dsn: string): Proc => {
    const env = testEnv(sandbox, llm.url, { FABRIC_DSN: dsn, FABRIC_RUNS_DIR: join(sandbox.dir, name) });
    const proc = spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    procs.push(proc);
    logs.set(proc, '');
    proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
    return proc;
  };
  /** A worker whose every connection to Postgres goes through its own proxy. */
  const startWorker = async (name: string) => {
    await mkdir(join(sandbox.dir, name), { recursive: true });
    const target = new URL(PG_SERVER_URL);
    const proxy = await startTcpProxy({
      target: { host: target.hostname, port: Number(target.port || 5432) },
    });
    proxies.push(proxy);
    const dsn = `${target.protocol}//${target.username}@127.0.0.1:${proxy.port}/${db.name}`;
    const proc = start(['worker', '--concurrency', '2'], name, dsn);
    await until(`worker ${name} to register`, async () =>
      /taking runs/.test(logs.get(proc) ?? '') ? true : undefined,
    );
    return { proc, proxy, runsDir: join(sandbox.dir, name) };
  };
  const enqueue = async (task: string): Promise<string> => {
    const response = await postJson(`${url}/v1/runs`, { specialist: 'units', task });
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  };
  const statusOf = async (id: string) =>
    ((await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string }).status;
  const row = async (id: string) => {
    const [found] = await sql<
      {
        status: string;
        ended_at: Date | null;
        lease_expires: Date | null;
        events: number;
        last_seq: number;
      }[]
    >`select status, ended_at, lease_expires,
        (select count(*)::int from control.run_events e where e.run_id = r.id) as events,
        (select coalesce(max(seq), 0)::int from control.run_events e where e.run_id = r.id) as last_seq
      from control.runs r where id = ${id}`;
    if (found === undefined) throw new Error(`no row for run ${id}`);
    return found;
  };
  const requestsOf = (task: string) =>
    llm.chatRequests().filter((request) => JSON.stringify(request.body).includes(task));

  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      // A window no run here fills: the responder counts the model's turns, which a compaction would shorten.
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });
    sandbox = await makeSandbox({
      control: { enabled: true },
      queue: 'postgres',
      // As before resumes (issue 31): a dead worker's run stays interrupted; queue-resume-e2e hands it on.
      worker: { heartbeat_s: HEARTBEAT_S, dead_after_s: DEAD_AFTER_S, max_resumes: 0 },
      loop: { max_steps: 400, stuck_repeats: 1000 },
    });
    await mkdir(join(sandbox.dir, 'server'));
    // The server reaches Postgres directly: only the workers are cut.
    server = start(['serve', '--port', '0'], 'server', db.dsn);
    url = await until(
      'the server to listen',
      async () => /listening on (http:\/\/\S+)/.exec(logs.get(server) ?? '')?.[1],
    );
  }, 60_000);

  afterAll(async () => {
    for (const proxy of proxies) proxy.heal();
    for (const proc of procs) proc.kill('SIGTERM');
    await Promise.all(procs.map((proc) => proc.catch(() => {})));
    await Promise.all(proxies.map((proxy) => proxy.close()));
    await sql?.end({ timeout: 2 });
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('ends interrupted the run of a worker killed 0–300 ms after taking it, with no live worker left', async () => {
    const random = seededRandom(26);
    for (let round = 0; round < 3; round++) {
      const { proc } = await startWorker(`killed-${round}`);
      const id = await enqueue(`Convert ${round} at length: steps=200 delay=50`);
      await until(`run ${id} taken`, async () =>
        (logs.get(proc) ?? '').includes(`run ${id} started`) ? true : undefined,
      );
      const delayMs = Math.round(random() * 300);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      proc.kill('SIGKILL');
      await proc.catch(() => {});
      const killedAt = Date.now();
      // No worker is alive: the server's reaper alone ends the run, on its lease.
      const status = await until(`run ${id} to end`, async () => {
        const now = await statusOf(id);
        return now === 'running' || now === 'queued' ? undefined : now;
      });
      expect(status).toBe('interrupted');
      const ended = await row(id);
      expect(ended.status).toBe('interrupted');
      // Reaped on the lease's expiry, not before it.
      expect(ended.ended_at?.getTime()).toBeGreaterThanOrEqual(ended.lease_expires?.getTime() ?? Number.NaN);
      console.info(
        `killed ${delayMs} ms after taking: interrupted ${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill (dead_after_s ${DEAD_AFTER_S}, heartbeat_s ${HEARTBEAT_S})`,
      );
    }
    expect(logs.get(server)).toMatch(/marked 1 run whose lease expired interrupted/);
  }, 90_000);

  it('stops the runs of a worker cut off past dead_after_s; nothing runs after interrupted, nothing flips, the worker comes back as a new one', async () => {
    const { proc, proxy, runsDir } = await startWorker('partitioned');
    const task = 'Convert while cut off: steps=300 delay=40';
    const id = await enqueue(task);
    await until('a few events mirrored', async () => ((await row(id)).events >= 6 ? true : undefined));
    const workerId = /(\S+) taking runs/.exec(logs.get(proc) ?? '')?.[1];
    // The partition: every byte between the worker and Postgres is held, in both directions.
    proxy.arm({ kind: 'stall_at_byte', direction: 'to_server', at: 0 });
    await until('the server to mark the run interrupted', async () =>
      (await statusOf(id)) === 'interrupted' ? true : undefined,
    );
    const marked = await row(id);
    await until('the worker to stop its run', async () =>
      (logs.get(proc) ?? '').includes(`run ${id} stopped: its lease could not be renewed`) ? true : undefined,
    );
    // The runlog on the worker's disk says interrupted too.
    const runlog = (await readFile(join(runsDir, id, 'runlog.jsonl'), 'utf8')).trim().split('\n');
    const end = JSON.parse(runlog.at(-1) ?? '{}') as { kind: string; status: string; ts: string };
    expect(end).toMatchObject({ kind: 'run_end', status: 'interrupted' });
    // Nothing ran after the server marked it: every model request came before.
    const markedAt = marked.ended_at?.getTime() ?? 0;
    const late = requestsOf(task).filter((request) => request.receivedAt > markedAt);
    expect(late).toEqual([]);
    expect(Date.parse(end.ts)).toBeLessThanOrEqual(markedAt);
    const requestsWhenStopped = requestsOf(task).length;

    // The database comes back: the worker's held and later writes reach it, and are refused.
    proxy.heal();
    const newId = await until(
      'the worker to register again',
      async () => /registering again as (\S+)/.exec(logs.get(proc) ?? '')?.[1],
    );
    const after = await enqueue('Convert after the partition: steps=2 delay=10');
    const afterStatus = await until('the run after the partition to end', async () => {
      const now = await statusOf(after);
      return now === 'running' || now === 'queued' ? undefined : now;
    });
    expect(afterStatus).toBe('succeeded');
    const [owner] = await sql<
      { lease_worker: string }[]
    >`select lease_worker from control.runs where id = ${after}`;
    expect(owner?.lease_worker).toBe(newId);
    const workers = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { id: string; state: string }[];
    };
    expect(workers.workers.find((w) => w.id === workerId)?.state).toBe('dead');
    expect(workers.workers.find((w) => w.id === newId)?.state).toBe('running');
    // Stopped, the worker writes what its mirror holds: the interrupted run never flips, and
    // gets none of the zombie's backlog.
    proc.kill('SIGTERM');
    await proc;
    expect(logs.get(proc)).toMatch(/stopped\n$/);
    const final = await row(id);
    expect(final.status).toBe('interrupted');
    expect(final.last_seq).toBe(marked.last_seq);
    expect(requestsOf(task).length).toBe(requestsWhenStopped);
  }, 90_000);
});

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { stepsResponder } from '../support/steps-responder.ts';
import { eventsOf, postJson, readSse } from './http/http-harness.ts';
import { until } from '../support/until.ts';

type Proc = ReturnType<typeof spawnFabric>;

describe('runs queued in Postgres and run by fabric workers', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let server: Proc;
  let url: string;
  const workers: Proc[] = [];
  const logs = new Map<Proc, string>();

  const start = (args: string[], runsDir: string): Proc => {
    const env = testEnv(sandbox, llm.url, { FABRIC_DSN: db.dsn, FABRIC_RUNS_DIR: runsDir });
    const proc = spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    logs.set(proc, '');
    proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
    return proc;
  };
  const enqueue = async (task: string): Promise<string> => {
    const response = await postJson(`${url}/v1/runs`, { specialist: 'units', task });
    expect(response.status).toBe(202);
    const body = (await response.json()) as { run_id: string; status: string };
    expect(body.status).toBe('queued');
    return body.run_id;
  };
  const statusOf = async (id: string) =>
    ((await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string }).status;
  const ended = (id: string, timeoutMs?: number) =>
    until(
      `run ${id} to end`,
      async () => {
        const status = await statusOf(id);
        return status === 'queued' || status === 'running' ? undefined : status;
      },
      timeoutMs,
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      // A window no run here fills: the responder counts the model's turns, which a compaction would shorten.
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });
    sandbox = await makeSandbox({
      control: { enabled: true },
      queue: 'postgres',
      worker: { heartbeat_s: 0.3, dead_after_s: 2 },
      // The long runs repeat one call on purpose (they are cancelled or killed): not stuck.
      loop: { max_steps: 100, stuck_repeats: 1000 },
    });
    // Each process has its own runs directory, as on separate hosts: the server sees runs
    // only through the control plane.
    for (const name of ['server', 'w0', 'w1', 'w2']) await mkdir(join(sandbox.dir, name));
    server = start(['serve', '--port', '0'], join(sandbox.dir, 'server'));
    for (const n of [0, 1, 2])
      workers.push(start(['worker', '--concurrency', '2'], join(sandbox.dir, `w${n}`)));
    url = await until(
      'the server to listen',
      async () => /listening on (http:\/\/\S+)/.exec(logs.get(server) ?? '')?.[1],
    );
    await until('three workers', async () => {
      const body = (await (await fetch(`${url}/v1/workers`)).json()) as { workers: { state: string }[] };
      return body.workers.filter((w) => w.state === 'running').length === 3 ? true : undefined;
    });
  }, 60_000);

  afterAll(async () => {
    for (const proc of [...workers, server]) proc?.kill('SIGTERM');
    await Promise.all([...workers, server].map((proc) => proc?.catch(() => {})));
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('lists the workers with their host, specialists and heartbeat', async () => {
    const body = (await (await fetch(`${url}/v1/workers`)).json()) as {
      queue: string;
      workers: { host: string; pid: number; specialists: string[]; state: string; last_heartbeat: string }[];
    };
    expect(body.queue).toBe('postgres');
    expect(new Set(body.workers.map((w) => w.pid))).toEqual(new Set(workers.map((w) => w.pid)));
    for (const worker of body.workers) {
      expect(worker).toMatchObject({ specialists: ['units'], state: 'running' });
      expect(Date.parse(worker.last_heartbeat)).not.toBeNaN();
    }
  });

  it('ends each of 60 runs enqueued over HTTP exactly once, spread over the workers', async () => {
    const ids = await Promise.all(
      Array.from({ length: 60 }, (_, n) => enqueue(`Convert ${n}: steps=2 delay=20`)),
    );
    const statuses = await Promise.all(ids.map((id) => ended(id)));
    expect(new Set(statuses)).toEqual(new Set(['succeeded']));
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ run_id: string; starts: number; ends: number; pid: number }[]>`
        select run_id, count(*) filter (where kind = 'run_start')::int as starts,
          count(*) filter (where kind = 'run_end')::int as ends,
          max((body->>'pid')::int) filter (where kind = 'run_start') as pid
        from control.run_events where run_id = any(${ids}) group by run_id`;
      expect(rows).toHaveLength(ids.length);
      for (const row of rows) expect(row, row.run_id).toMatchObject({ starts: 1, ends: 1 });
      const pids = new Set(rows.map((row) => row.pid));
      expect(pids.size).toBeGreaterThan(1);
      for (const pid of pids) expect(workers.map((w) => w.pid)).toContain(pid);
    } finally {
      await sql.end();
    }
    // The server lists the workers' runs (their runlogs are on the workers' disks), and so does
    // the viewer.
    const listed = (await (await fetch(`${url}/v1/runs?limit=100`)).json()) as {
      runs: { run_id: string; status: string }[];
    };
    const byId = new Map(listed.runs.map((run) => [run.run_id, run.status]));
    for (const id of ids) expect(byId.get(id), id).toBe('succeeded');
    // Its first page: 50 of these runs (the newest), each shown succeeded.
    const page = await (await fetch(`${url}/`)).text();
    const rows = [...page.matchAll(/<tr data-run-id="([^"]+)" data-status="([a-z_]+)"/g)];
    expect(rows).toHaveLength(50);
    for (const [, id, status] of rows) {
      expect(ids).toContain(id);
      expect(status).toBe('succeeded');
    }
  }, 60_000);

  it("streams a worker's events through the server while the run goes on", async () => {
    const id = await enqueue('Convert slowly: steps=5 delay=150');
    await until('the run to start', async () => ((await statusOf(id)) === 'running' ? true : undefined));
    const response = await fetch(`${url}/v1/runs/${id}/events`);
    const lags: number[] = [];
    let runningSeen = false;
    const frames = await readSse(response, (frame) => {
      const event = JSON.parse(frame.data) as { ts: string; kind: string };
      lags.push(Date.now() - Date.parse(event.ts));
      if (event.kind === 'tool_result' && !runningSeen) runningSeen = true;
      return false;
    });
    const events = eventsOf(frames);
    expect(events[0]?.kind).toBe('run_start');
    expect(events.at(-1)?.kind).toBe('run_end');
    expect(events.map((event) => event.seq)).toEqual(events.map((_, n) => n + 1));
    expect(runningSeen).toBe(true);
    // The lag from a worker's write to the SSE client, reported (never asserted: no timing in tests).
    const live = lags.slice(-Math.min(lags.length, 20)).sort((a, b) => a - b);
    console.info(`queue event lag (ms): median ${live[Math.floor(live.length / 2)]}, max ${live.at(-1)}`);
    expect(await statusOf(id)).toBe('succeeded');
  }, 30_000);

  it('reaches the worker with a cancel', async () => {
    const id = await enqueue('Convert for ever: steps=90 delay=100');
    await until('the run to start', async () => ((await statusOf(id)) === 'running' ? true : undefined));
    const response = await postJson(`${url}/v1/runs/${id}/cancel`, {});
    expect(response.status).toBe(200);
    expect(((await response.json()) as { status: string }).status).toBe('cancelled');
  }, 30_000);

  it('marks the run of a worker killed mid-run interrupted, and the other runs are unaffected', async () => {
    const long = await enqueue('Convert at length: steps=90 delay=100');
    const ownerPid = await until('a worker to take the long run', async () => {
      const body = (await (await fetch(`${url}/v1/workers`)).json()) as {
        workers: { pid: number; runs: string[] }[];
      };
      return body.workers.find((w) => w.runs.includes(long))?.pid;
    });
    // A subprocess is a thenable: `until` would wait for it to exit, so it returns the pid.
    const owner = workers.find((w) => w.pid === ownerPid);
    if (owner === undefined) throw new Error(`no worker has pid ${ownerPid}`);
    await until('the run to start', async () => ((await statusOf(long)) === 'running' ? true : undefined));
    owner.kill('SIGKILL');
    const others = await Promise.all(
      Array.from({ length: 6 }, (_, n) => enqueue(`Convert after ${n}: steps=2 delay=20`)),
    );
    expect(await ended(long)).toBe('interrupted');
    expect(new Set(await Promise.all(others.map((id) => ended(id))))).toEqual(new Set(['succeeded']));
    const body = (await (await fetch(`${url}/v1/workers`)).json()) as {
      workers: { pid: number; state: string }[];
    };
    expect(body.workers.find((w) => w.pid === owner.pid)?.state).toBe('dead');
  }, 60_000);
});

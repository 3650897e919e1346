/**
 * Issue 35: a worker's database connection cut for 2.5 s (under `dead_after_s`, 6 s) at the
 * moment its run ends, at several offsets from before its last turns to after its run_end. The
 * run must end with its true status in the control plane, with every runlog line mirrored: the
 * worker holds the lease until the end is recorded, so its own reaper never takes the run.
 */
import { mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_SERVER_URL, createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { stepsResponder } from '../support/steps-responder.ts';
import { type TcpProxy, startTcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/until.ts';
import { postJson } from './http/http-harness.ts';

type Proc = ReturnType<typeof spawnFabric>;
const CUT_MS = 2_500;
const OFFSETS = 8;
const TASK = 'Convert up to the cut: steps=8 delay=450';

describe('a short cut between a worker and the database as its run ends', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let sql: ReturnType<typeof postgres>;
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let server: Proc;
  let worker: Proc;
  let proxy: TcpProxy;
  let url: string;
  const logs = new Map<Proc, string>();
  const target = new URL(PG_SERVER_URL);
  const upstream = { host: target.hostname, port: Number(target.port || 5432) };
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const start = (args: string[], name: string, dsn: string): Proc => {
    const env = testEnv(sandbox, llm.url, { FABRIC_DSN: dsn, FABRIC_RUNS_DIR: join(sandbox.dir, name) });
    const proc = spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    logs.set(proc, '');
    proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
    return proc;
  };
  const row = async (id: string) => {
    const [found] = await sql<{ status: string; events: number }[]>`
      select r.status, (select count(*)::int from control.run_events e where e.run_id = r.id) as events
      from control.runs r where r.id = ${id}`;
    return found ?? { status: 'missing', events: 0 };
  };
  const runlogLines = async (id: string) =>
    (await readFile(join(sandbox.dir, 'worker', id, 'runlog.jsonl'), 'utf8')).trim().split('\n');
  const enqueue = async () => {
    const response = await postJson(`${url}/v1/runs`, { specialist: 'units', task: TASK });
    const id = ((await response.json()) as { run_id: string }).run_id;
    await until('the run to start', async () => ((await row(id)).status === 'running' ? true : undefined));
    return id;
  };
  const ended = (id: string) =>
    until(
      'the run to end in the control plane',
      async () => {
        const now = (await row(id)).status;
        return now === 'running' || now === 'queued' ? undefined : now;
      },
      60_000,
    );

  beforeAll(async () => {
    db = await createTestDatabase();
    sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });
    sandbox = await makeSandbox({
      control: { enabled: true },
      queue: 'postgres',
      worker: { heartbeat_s: 3, dead_after_s: 6, max_resumes: 0 },
      loop: { max_steps: 200, stuck_repeats: 1000 },
    });
    for (const name of ['server', 'worker']) await mkdir(join(sandbox.dir, name));
    server = start(['serve', '--port', '0'], 'server', db.dsn);
    proxy = await startTcpProxy({ target: upstream });
    worker = start(
      ['worker'],
      'worker',
      `${target.protocol}//${target.username}@127.0.0.1:${proxy.port}/${db.name}`,
    );
    url = await until(
      'the server to listen',
      async () => /listening on (http:\/\/\S+)/.exec(logs.get(server) ?? '')?.[1],
    );
    await until('the worker to register', async () =>
      /taking runs/.test(logs.get(worker) ?? '') ? true : undefined,
    );
  }, 60_000);

  afterAll(async () => {
    for (const proc of [worker, server]) proc?.kill('SIGTERM');
    await Promise.all([worker, server].map((proc) => proc?.catch(() => {})));
    await proxy?.close();
    await sql?.end({ timeout: 2 });
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('ends every run with its true status and every runlog line mirrored, wherever the cut falls', async () => {
    // How long a run lasts from the moment its row says running (no cut): the cuts are placed around it.
    const first = await enqueue();
    const startedAt = Date.now();
    expect(await ended(first)).toBe('succeeded');
    const length = Date.now() - startedAt;

    const outcomes: string[] = [];
    for (let n = 0; n < OFFSETS; n += 1) {
      // From the cut ending just before the run's end to the cut starting just after it.
      const low = Math.max(0, length - CUT_MS + 300);
      const offset = Math.round(low + ((length + 400 - low) * n) / (OFFSETS - 1));
      const id = await enqueue();
      await sleep(offset);
      // The cut: every connection dropped, new ones refused; then the database is back where it was.
      const port = proxy.port;
      const cutAt = Date.now();
      await proxy.close();
      await sleep(CUT_MS);
      proxy = await startTcpProxy({ target: upstream, port });
      const status = await ended(id);
      const lines = await runlogLines(id);
      const end = JSON.parse(lines.at(-1) ?? '{}') as { kind?: string; status?: string; ts?: string };
      const endInCut = Date.parse(end.ts ?? '') - cutAt;
      // The backfill writes what the cut dropped; wait for it (the status above may come first).
      const mirrored =
        status !== 'succeeded'
          ? -1
          : await until(
              'every runlog line in the control plane',
              async () => {
                const now = (await row(id)).events;
                return now >= lines.length ? now : undefined;
              },
              20_000,
            ).catch(() => -1);
      const events = mirrored === -1 ? (await row(id)).events : mirrored;
      outcomes.push(
        `offset ${offset} ms (run_end ${endInCut} ms into the cut): runlog ${end.kind} ${end.status} (${lines.length} lines), control ${status} (${events} events)`,
      );
    }
    console.info(`run length ${length} ms, cut ${CUT_MS} ms\n${outcomes.join('\n')}`);
    const wrong = outcomes.filter(
      (line) => !/runlog run_end succeeded \((\d+) lines\), control succeeded \(\1 events\)/.test(line),
    );
    expect(wrong).toEqual([]);
  }, 170_000);
});

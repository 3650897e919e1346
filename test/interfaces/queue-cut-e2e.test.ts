/**
 * Issue 26: a worker's database connection cut for 2.5 s (shorter than `dead_after_s`) during a
 * run. The run goes on, its event copy retries with backoff, and once the database is back the
 * run's status and its SSE stream catch up — the stream in order, with no hole. The worker says
 * the database "answers again" only once it does. The catch-up time is printed, not asserted.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PG_SERVER_URL, createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { stepsResponder } from '../support/steps-responder.ts';
import { type TcpProxy, startTcpProxy } from '../support/tcp-proxy.ts';
import { until } from '../support/until.ts';
import { eventsOf, postJson, readSse } from './http/http-harness.ts';

type Proc = ReturnType<typeof spawnFabric>;

describe('a short cut between a worker and the database', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let server: Proc;
  let worker: Proc;
  let proxy: TcpProxy;
  let url: string;
  const logs = new Map<Proc, string>();
  const target = new URL(PG_SERVER_URL);
  const upstream = { host: target.hostname, port: Number(target.port || 5432) };

  const start = (args: string[], name: string, dsn: string): Proc => {
    const env = testEnv(sandbox, llm.url, { FABRIC_DSN: dsn, FABRIC_RUNS_DIR: join(sandbox.dir, name) });
    const proc = spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    logs.set(proc, '');
    proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
    return proc;
  };
  const statusOf = async (id: string) =>
    ((await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string }).status;

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
      worker: { heartbeat_s: 0.25, dead_after_s: 10 },
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
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('goes on through the cut; status and SSE catch up in order once the database is back', async () => {
    const response = await postJson(`${url}/v1/runs`, {
      specialist: 'units',
      task: 'Convert through a cut: steps=60 delay=60',
    });
    const id = ((await response.json()) as { run_id: string }).run_id;
    await until('the run to start', async () => ((await statusOf(id)) === 'running' ? true : undefined));
    const stream = readSse(await fetch(`${url}/v1/runs/${id}/events`), () => false);

    // The cut: every connection dropped, new ones refused, for 2.5 s; then the database is back
    // where it was.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const port = proxy.port;
    await proxy.close();
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const beforeHeal = logs.get(worker) ?? '';
    proxy = await startTcpProxy({ target: upstream, port });
    const healedAt = Date.now();

    expect(beforeHeal).toMatch(/could not /);
    expect(beforeHeal).not.toMatch(/answers again/);
    const status = await until(
      'the run to end',
      async () => {
        const now = await statusOf(id);
        return now === 'running' || now === 'queued' ? undefined : now;
      },
      60_000,
    );
    expect(status).toBe('succeeded');
    console.info(
      `status caught up ${((Date.now() - healedAt) / 1000).toFixed(1)} s after the database came back`,
    );
    const events = eventsOf(await stream);
    expect(events[0]?.kind).toBe('run_start');
    expect(events.at(-1)?.kind).toBe('run_end');
    expect(events.map((event) => event.seq)).toEqual(events.map((_, n) => n + 1));
    await until('the worker to say the database answers again', async () =>
      /answers again/.test(logs.get(worker) ?? '') ? true : undefined,
    );
  }, 90_000);
});

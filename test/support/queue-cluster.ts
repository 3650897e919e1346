/**
 * A run queue of real processes for end-to-end tests: one Postgres database, a `fabric serve`
 * reaching it directly, and `fabric worker`s each reaching it through its own TCP proxy (so a test
 * can cut or stall one worker's database), with their logs kept. Every process shares the
 * sandbox's config; a worker's runs directory is its own unless the test names a shared one.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { expect } from 'vitest';
import { PG_SERVER_URL, createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { postJson } from '../interfaces/http/http-harness.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from './fabric-cli.ts';
import { type TcpProxy, startTcpProxy } from './tcp-proxy.ts';
import { until } from './until.ts';

export type Proc = ReturnType<typeof spawnFabric>;

/** A started worker: its process, its proxy to Postgres, and its runs directory. */
export interface ClusterWorker {
  readonly proc: Proc;
  readonly proxy: TcpProxy;
  readonly runsDir: string;
}

/** A run's row in the control plane, with its mirrored events. */
export interface RunRow {
  status: string;
  ended_at: Date | null;
  lease_expires: Date | null;
  resumes: number;
  events: number;
  last_seq: number;
}

export interface QueueCluster {
  readonly sandbox: Sandbox;
  readonly sql: ReturnType<typeof postgres>;
  readonly url: string;
  readonly server: Proc;
  /** What a process wrote to stderr so far. */
  log(proc: Proc): string;
  /** Starts a worker (`--concurrency`, default 2) and waits until it takes runs. */
  startWorker(name: string, options?: { runsDir?: string; concurrency?: number }): Promise<ClusterWorker>;
  /** Queues a `units` run over HTTP; returns its id. */
  enqueue(task: string): Promise<string>;
  statusOf(id: string): Promise<string>;
  /** Waits for a run to leave `queued` and `running`; returns its status. */
  ended(id: string): Promise<string>;
  row(id: string): Promise<RunRow>;
  stop(): Promise<void>;
}

/** Starts the database, the sandbox (`config` merged into its config) and the server. */
export async function startQueueCluster(
  llmUrl: string,
  config: Record<string, unknown>,
): Promise<QueueCluster> {
  const db = await createTestDatabase();
  const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
  const sandbox = await makeSandbox({ control: { enabled: true }, queue: 'postgres', ...config });
  const procs: Proc[] = [];
  const proxies: TcpProxy[] = [];
  const logs = new Map<Proc, string>();
  // Wrapped: a process is a promise of its end, which an async function would wait for.
  const start = async (args: string[], runsDir: string, dsn: string): Promise<{ proc: Proc }> => {
    await mkdir(runsDir, { recursive: true });
    const env = testEnv(sandbox, llmUrl, { FABRIC_DSN: dsn, FABRIC_RUNS_DIR: runsDir });
    const proc = spawnFabric([...args, '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    procs.push(proc);
    logs.set(proc, '');
    proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
    return { proc };
  };
  const log = (proc: Proc) => logs.get(proc) ?? '';
  // The server reaches Postgres directly: only the workers are cut.
  const { proc: server } = await start(['serve', '--port', '0'], join(sandbox.dir, 'server'), db.dsn);
  const url = await until(
    'the server to listen',
    async () => /listening on (http:\/\/\S+)/.exec(log(server))?.[1],
  );
  const statusOf = async (id: string) =>
    ((await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string }).status;
  return {
    sandbox,
    sql,
    url,
    server,
    log,
    async startWorker(name, options = {}) {
      const target = new URL(PG_SERVER_URL);
      const proxy = await startTcpProxy({
        target: { host: target.hostname, port: Number(target.port || 5432) },
      });
      proxies.push(proxy);
      const dsn = `${target.protocol}//${target.username}@127.0.0.1:${proxy.port}/${db.name}`;
      const runsDir = options.runsDir ?? join(sandbox.dir, name);
      const concurrency = String(options.concurrency ?? 2);
      const { proc } = await start(['worker', '--concurrency', concurrency], runsDir, dsn);
      await until(`worker ${name} to register`, async () =>
        /taking runs/.test(log(proc)) ? true : undefined,
      );
      return { proc, proxy, runsDir };
    },
    async enqueue(task) {
      const response = await postJson(`${url}/v1/runs`, { specialist: 'units', task });
      expect(response.status).toBe(202);
      return ((await response.json()) as { run_id: string }).run_id;
    },
    statusOf,
    ended: (id) =>
      until(`run ${id} to end`, async () => {
        const now = await statusOf(id);
        return now === 'running' || now === 'queued' ? undefined : now;
      }),
    async row(id) {
      const [found] = await sql<RunRow[]>`select status, ended_at, lease_expires, resumes,
          (select count(*)::int from control.run_events e where e.run_id = r.id) as events,
          (select coalesce(max(seq), 0)::int from control.run_events e where e.run_id = r.id) as last_seq
        from control.runs r where id = ${id}`;
      if (found === undefined) throw new Error(`no row for run ${id}`);
      return found;
    },
    async stop() {
      for (const proxy of proxies) proxy.heal();
      for (const proc of procs) {
        proc.kill('SIGCONT');
        proc.kill('SIGTERM');
      }
      await Promise.all(procs.map((proc) => proc.catch(() => {})));
      await Promise.all(proxies.map((proxy) => proxy.close()));
      await sql.end({ timeout: 2 });
      await sandbox.cleanup();
      await db.drop();
    },
  };
}

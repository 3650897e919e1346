import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../../../src/config/load.ts';
import { createFabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { unitsResponder } from '../../support/battery-fakes.ts';
import { EXAMPLE_PACK, makeSandbox, type Sandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { until } from '../../support/until.ts';

const ALPHA = 'lab/alpha-7b';
const BETA = 'lab/beta-7b';

type Proc = ReturnType<typeof spawnFabric>;

interface BatteryJson {
  id: string;
  cells: { task: string; model: string; run_id: string | null; seconds: number; [key: string]: unknown }[];
  models: { model: string; median_seconds: number | null; [key: string]: unknown }[];
}

/** The matrix apart from what differs between any two runs of it: timings and run ids. */
function shape(json: BatteryJson) {
  return {
    cells: json.cells.map(({ seconds: _s, run_id, ...cell }) => ({ ...cell, ran: run_id !== null })),
    models: json.models.map(({ median_seconds: _m, ...model }) => model),
  };
}

describe('battery cells queued in Postgres and run by fabric workers', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  let queuedConfig: string;
  const workers: Proc[] = [];
  const logs = new Map<Proc, string>();

  const env = (extra: Record<string, string> = {}) =>
    testEnv(sandbox, llm.url, { FABRIC_DSN: db.dsn, ...extra });
  const battery = (config: string, args: string[]) =>
    spawnFabric(['battery', ...args, '--config', config], { env: env(), cwd: sandbox.dir });
  const writeConfig = async (name: string, fields: Record<string, unknown>): Promise<string> => {
    const path = join(sandbox.dir, name);
    await writeFile(
      path,
      stringify({
        version: 1,
        llm: { retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 5000 },
        specialists: {
          units: {
            builder: `${EXAMPLE_PACK}#buildPack`,
            description: 'unit conversions',
            sandbox: { allowed_commands: ['grep'], timeout_s: 30 },
          },
        },
        control: { enabled: true },
        ...fields,
      }),
    );
    return path;
  };
  const writeBattery = async (name: string, workspace: string): Promise<string> => {
    const path = join(sandbox.dir, name);
    await writeFile(
      path,
      stringify({
        name: 'units-queued',
        specialist: 'units',
        workspace,
        models: [ALPHA, BETA],
        max_steps: 3,
        tasks: [
          {
            id: 'km-to-mi',
            task: 'Convert 3 km to miles',
            expect: {
              status: 'succeeded',
              commands: ['grep -q km notes.txt'],
              files_contain: { 'notes.txt': 'km' },
            },
          },
          {
            id: 'ft-to-m',
            task: 'Convert 10 feet to metres',
            expect: { status: 'succeeded', commands: ['grep -q miles notes.txt'] },
          },
        ],
      }),
    );
    return path;
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      // beta never finishes the feet task; every turn takes a little while, so both workers get cells.
      respond: unitsResponder(
        (model, task) => (model === BETA && task.includes('feet') ? 'never_finishes' : 'converts'),
        { delayMs: 40 },
      ),
      models: [
        { id: ALPHA, toolUse: true, loaded: true },
        { id: BETA, toolUse: true, loaded: true },
      ],
    });
    sandbox = await makeSandbox();
    await mkdir(join(sandbox.dir, 'ws', '.git'), { recursive: true });
    await writeFile(join(sandbox.dir, 'ws', 'notes.txt'), 'distances in km\n');
    await writeFile(join(sandbox.dir, 'ws', '.git', 'HEAD'), 'ref: refs/heads/main\n');
    queuedConfig = await writeConfig('queued.yaml', {
      queue: 'postgres',
      worker: { heartbeat_s: 0.3, dead_after_s: 5 },
    });
    for (const n of [0, 1]) {
      const runsDir = join(sandbox.dir, `w${n}`);
      await mkdir(runsDir);
      const proc = spawnFabric(['worker', '--concurrency', '1', '--config', queuedConfig], {
        env: env({ FABRIC_RUNS_DIR: runsDir }),
        cwd: sandbox.dir,
      });
      logs.set(proc, '');
      proc.stderr?.on('data', (chunk: Buffer) => logs.set(proc, `${logs.get(proc)}${chunk.toString()}`));
      workers.push(proc);
    }
    await until('two workers', async () =>
      [...logs.values()].every((log) => log.includes('taking runs')) ? true : undefined,
    );
  }, 60_000);

  afterAll(async () => {
    for (const proc of workers) proc.kill('SIGTERM');
    await Promise.all(workers.map((proc) => proc.catch(() => {})));
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('spreads the cells over two workers and scores them into the same matrix as in-process', async () => {
    const file = await writeBattery('battery.yaml', './ws');
    const inProcess = await battery(await writeConfig('local.yaml', {}), [file, '--json']);
    expect(inProcess.exitCode, inProcess.stderr).toBe(0);
    const queued = await battery(queuedConfig, [file, '--json']);
    expect(queued.exitCode, queued.stderr).toBe(0);

    const local = JSON.parse(inProcess.stdout) as BatteryJson;
    const remote = JSON.parse(queued.stdout) as BatteryJson;
    expect(shape(remote)).toEqual(shape(local));
    // The checks ran in each cell's unpacked workspace on the worker: the file check passed, the
    // command failed where the file says nothing of miles.
    const cell = (task: string, model: string) =>
      remote.cells.find((c) => c.task === task && c.model === model);
    expect(cell('km-to-mi', ALPHA)).toMatchObject({ status: 'succeeded', passed: true });
    expect(cell('ft-to-m', ALPHA)).toMatchObject({
      passed: false,
      failed_check: 'command: grep -q miles notes.txt',
    });
    expect(cell('ft-to-m', BETA)).toMatchObject({ status: 'max_steps', failed_check: 'status' });

    const ran = remote.cells.flatMap((c) => (c.run_id === null ? [] : [c.run_id]));
    expect(ran).toHaveLength(4);
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    try {
      const rows = await sql<{ run_id: string; pid: number; battery: string }[]>`
        select run_id, (body->>'pid')::int as pid, body->'tags'->>'battery' as battery
        from control.run_events where kind = 'run_start' and run_id = any(${ran})`;
      expect(rows).toHaveLength(4);
      for (const row of rows) expect(row.battery).toBe(remote.id);
      const pids = new Set(rows.map((row) => row.pid));
      expect([...pids].sort()).toEqual(workers.map((w) => w.pid).sort());
    } finally {
      await sql.end();
    }
  }, 120_000);

  it('refuses a workspace over the archive limit before any cell runs, naming the limit and its key', async () => {
    await mkdir(join(sandbox.dir, 'big'));
    await writeFile(join(sandbox.dir, 'big', 'data.bin'), Buffer.alloc(64 * 1024));
    const file = await writeBattery('big.yaml', './big');
    const config = await writeConfig('tiny-archive.yaml', {
      queue: 'postgres',
      worker: { archive_max_mib: 0.01 },
    });
    const result = await battery(config, [file, '--json']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('worker.archive_max_mib');
    expect(result.stderr).toMatch(/more than 0\.01 MiB/);
  }, 60_000);

  it('answers POST /v1/batteries with 413 workspace_too_large for such a workspace, queuing nothing', async () => {
    await mkdir(join(sandbox.dir, 'big-http'), { recursive: true });
    await writeFile(join(sandbox.dir, 'big-http', 'data.bin'), Buffer.alloc(64 * 1024));
    const file = await writeBattery('big-http.yaml', './big-http');
    const configPath = await writeConfig('tiny-archive-http.yaml', {
      queue: 'postgres',
      worker: { archive_max_mib: 0.01 },
    });
    const fabric = createFabric(await loadConfig({ configPath, cwd: sandbox.dir, env: env() }), {
      env: env(),
    });
    try {
      const response = await createApp({ fabric, requireToken: false }).request('/v1/batteries', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ battery: await readFile(file, 'utf8'), base_dir: sandbox.dir }),
      });
      expect(response.status).toBe(413);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('workspace_too_large');
      expect(body.error.message).toContain('worker.archive_max_mib');
    } finally {
      await fabric.close();
    }
  }, 60_000);
});

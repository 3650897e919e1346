import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { closedPort, createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('the control plane through the CLI', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function runOnce(env: Record<string, string>) {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    if (!sandbox) throw new Error('no sandbox');
    const out = await runFabricInProcess(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km'],
      {
        env: { ...testEnv(sandbox, server.url), ...env },
        cwd: sandbox.dir,
      },
    );
    return { ...out, result: JSON.parse(out.stdout) as RunResult };
  }

  async function runlogLines(path: string): Promise<number> {
    return (await readFile(path, 'utf8')).trim().split('\n').length;
  }

  it('mirrors a run to Postgres row for row', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    sandbox = await makeSandbox({ control: { enabled: true } });
    const { exitCode, result } = await runOnce({ FABRIC_DSN: db.dsn });
    expect(exitCode).toBe(0);
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end());
    const [run] =
      await sql`select status, steps, total_tokens, specialist from control.runs where id = ${result.run_id}`;
    expect(run).toMatchObject({ status: 'succeeded', steps: 3, specialist: 'units' });
    const [{ count }] =
      (await sql`select count(*)::int as count from control.run_events where run_id = ${result.run_id}`) as unknown as [
        { count: number },
      ];
    expect(count).toBe(await runlogLines(result.runlog));
    const calls =
      await sql`select tool, success from control.agent_run where run_id = ${result.run_id} order by seq`;
    expect(calls.map((call) => `${call.tool}:${call.success}`)).toEqual([
      'lm_studio:true',
      'lm_studio:true',
      'lm_studio:true',
    ]);
  });

  it('keeps a run succeeded when the database is down, and sync fills in exactly what was missing', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    sandbox = await makeSandbox({ control: { enabled: true } });
    const down = `postgres://postgres@127.0.0.1:${await closedPort()}/nothing`;
    const { exitCode, result, stderr } = await runOnce({ FABRIC_DSN: down });
    expect(exitCode).toBe(0);
    expect(result.status).toBe('succeeded');
    expect(stderr).toMatch(
      /control plane unavailable \(db_off\) at [^\n]*[^.]\. The run goes on; .*fabric control sync/s,
    );
    expect(stderr.match(/control plane/g)).toHaveLength(1);

    const env = { ...testEnv(sandbox, 'http://127.0.0.1:9'), FABRIC_DSN: db.dsn };
    const first = await runFabricInProcess(['control', 'sync', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(first.exitCode, first.stderr).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({
      runsUpdated: 1,
      eventsInserted: await runlogLines(result.runlog),
    });
    const second = await runFabricInProcess(['control', 'sync', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(JSON.parse(second.stdout)).toMatchObject({
      runsUpdated: 0,
      eventsInserted: 0,
      modelCallsInserted: 0,
    });
  });

  it('uses the embedded database by default: the export creates it from the runlogs, and runs are listed from it', async () => {
    sandbox = await makeSandbox({ control: { enabled: true } });
    const { result } = await runOnce({});
    const env = testEnv(sandbox, 'http://127.0.0.1:9');
    const listRuns = async () => {
      const runs = await runFabricInProcess(['runs', '--json', '--config', sandbox!.configPath], {
        env,
        cwd: sandbox!.dir,
      });
      return JSON.parse(runs.stdout) as { source: string; runs: { run_id: string; status: string }[] };
    };
    // A one-shot run leaves the database alone, and listing does not create it (issue 20).
    const before = await listRuns();
    expect(before.source).toMatch(/^runlogs in /);
    expect(before.runs).toEqual([expect.objectContaining({ run_id: result.run_id, status: 'succeeded' })]);
    expect(await readdir(sandbox.runsDir)).not.toContain('.control');

    const out = join(sandbox.dir, 'exports');
    const exported = await runFabricInProcess(
      ['control', 'export', '--out', out, '--json', '--config', sandbox.configPath],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(exported.exitCode, exported.stderr).toBe(0);
    expect((await readdir(out)).sort()).toEqual([
      'lm_health_7d.json',
      'lm_indicator.json',
      'lm_insights_7d.json',
      'lm_usage_7d.json',
    ]);
    const indicator = JSON.parse(await readFile(join(out, 'lm_indicator.json'), 'utf8'));
    expect(indicator).toMatchObject({ status: 'healthy', reason: 'ok', total_calls: 3, db_off: false });

    const after = await listRuns();
    expect(after.source).toMatch(/^pglite /);
    expect(after.runs).toEqual([expect.objectContaining({ run_id: result.run_id, status: 'succeeded' })]);
  });

  it('exports db_off files when the database is unreachable, and lists runs from the runlogs', async () => {
    sandbox = await makeSandbox({ control: { enabled: true } });
    const down = `postgres://postgres@127.0.0.1:${await closedPort()}/nothing`;
    const { result } = await runOnce({ FABRIC_DSN: down });
    const env = { ...testEnv(sandbox, 'http://127.0.0.1:9'), FABRIC_DSN: down };
    const out = join(sandbox.dir, 'exports');
    const exported = await runFabricInProcess(
      ['control', 'export', '--out', out, '--config', sandbox.configPath],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(exported.exitCode).toBe(0);
    expect(JSON.parse(await readFile(join(out, 'lm_indicator.json'), 'utf8'))).toMatchObject({
      status: 'offline',
      reason: 'db_off',
      db_off: true,
    });
    const runs = await runFabricInProcess(['runs', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    const listed = JSON.parse(runs.stdout) as { source: string; runs: { run_id: string }[] };
    expect(listed.source).toMatch(/^runlogs in /);
    expect(listed.runs.map((run) => run.run_id)).toEqual([result.run_id]);
  });
});

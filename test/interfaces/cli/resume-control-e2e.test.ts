import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { RunHub } from '../../../src/interfaces/http/run-hub.ts';
import { closedPort, createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { makeFabric } from '../http/http-harness.ts';

/**
 * SPEC §18 with §7: a resumed run has two `run_end`s; the control plane's row follows the last
 * (status, steps, ended_at), so readers with only the control plane show the resumed outcome.
 */
const MODEL = 'qwen/qwen3-coder-30b';

describe('a resumed run in the control plane (Postgres)', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function setUp() {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end());
    sandbox = await makeSandbox({ control: { enabled: true } });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const env = { ...testEnv(sandbox, llm.url), FABRIC_DSN: db.dsn };
    const box = sandbox;
    const fabric = (args: readonly string[], extra: Record<string, string> = {}) =>
      runFabricInProcess([...args, '--config', box.configPath], { env: { ...env, ...extra }, cwd: box.dir });
    const row = async (id: string) =>
      (
        (await sql`select status, steps, ended_at from control.runs where id = ${id}`) as unknown as {
          status: string;
          steps: number;
          ended_at: Date;
        }[]
      )[0];
    // A run that used its one step: max_steps, its first run_end.
    const first = await fabric(['run', '-s', 'units', '--max-steps', '1', '--json', 'Convert 3 km to miles']);
    expect(first.exitCode, first.stderr).toBe(3);
    const runId = (JSON.parse(first.stdout) as RunResult).run_id;
    const logs = new KilledRuns(box, env);
    const [firstEnd] = (await logs.events(runId)).filter((event) => event.kind === 'run_end');
    const stopped = { status: 'max_steps', steps: firstEnd?.kind === 'run_end' ? firstEnd.steps : -1 };
    expect(await row(runId)).toMatchObject(stopped);
    return { db, env, fabric, row, runId, logs, stopped };
  }

  function lastEnd(events: readonly RunEvent[]) {
    const ends = events.filter((event) => event.kind === 'run_end');
    expect(ends.map((event) => event.kind === 'run_end' && event.status)).toEqual(['max_steps', 'succeeded']);
    const end = ends.at(-1);
    if (end?.kind !== 'run_end') throw new Error('no run_end');
    return end;
  }

  it('follows the last run_end, and shows the resumed outcome with the control plane as the only source', async () => {
    const { env, fabric, row, runId, logs } = await setUp();
    const resumed = await fabric(['resume', runId, '--max-steps', '3', '--json']);
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    const end = lastEnd(await logs.events(runId));
    expect(await row(runId)).toEqual({ status: 'succeeded', steps: end.steps, ended_at: new Date(end.ts) });

    // Another runs directory: the control plane is the only place the run is.
    const elsewhere = join(sandbox?.dir ?? '', 'other-runs');
    await mkdir(elsewhere);
    const listed = await fabric(['runs', '--json'], { FABRIC_RUNS_DIR: elsewhere });
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({
      runs: [{ run_id: runId, status: 'succeeded', steps: end.steps, ended_at: end.ts }],
    });
    const shown = await fabric(['runs', 'show', runId, '--json'], { FABRIC_RUNS_DIR: elsewhere });
    expect(JSON.parse(shown.stdout), shown.stderr).toMatchObject({
      run_id: runId,
      status: 'succeeded',
      steps: end.steps,
      ended_at: end.ts,
    });
    // The API looks for a run without a runlog in the control plane when runs are queued there.
    const queued = await makeSandbox({ control: { enabled: true }, queue: 'postgres' });
    cleanups.push(() => queued.cleanup());
    const http = await makeFabric(queued, llm?.url ?? '', {
      FABRIC_DSN: env.FABRIC_DSN,
      FABRIC_RUNS_DIR: elsewhere,
    });
    const hub = new RunHub(http);
    cleanups.push(() => http.close());
    cleanups.push(() => hub.close());
    const app = createApp({ fabric: http, token: undefined, requireToken: false, hub });
    const view = (await (await app.request(`/v1/runs/${runId}`)).json()) as Record<string, unknown>;
    expect(view).toMatchObject({ run_id: runId, status: 'succeeded', steps: end.steps, ended_at: end.ts });
  });

  it('takes the resumed outcome from the runlog on sync when the resume ran with the database down', async () => {
    const { fabric, row, runId, logs, stopped } = await setUp();
    const down = `postgres://postgres@127.0.0.1:${await closedPort()}/nothing`;
    const resumed = await fabric(['resume', runId, '--max-steps', '3', '--json'], { FABRIC_DSN: down });
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    expect(await row(runId)).toMatchObject(stopped);

    const synced = await fabric(['control', 'sync', '--json']);
    expect(synced.exitCode, synced.stderr).toBe(0);
    const end = lastEnd(await logs.events(runId));
    expect(await row(runId)).toEqual({ status: 'succeeded', steps: end.steps, ended_at: new Date(end.ts) });
  });
});

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { RunHub } from '../../../src/interfaces/http/run-hub.ts';
import { closedPort, createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import type { ScriptedTurn } from '../../support/fake-llm-types.ts';
import { KilledRuns, PATIENCE } from '../../support/killed-run.ts';
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

  async function setUp(script = CONVERSION_SCRIPT) {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end());
    sandbox = await makeSandbox({ control: { enabled: true } });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script,
    });
    const env = { ...testEnv(sandbox, llm.url), FABRIC_DSN: db.dsn };
    const box = sandbox;
    const fabric = (args: readonly string[], extra: Record<string, string> = {}) =>
      runFabricInProcess([...args, '--config', box.configPath], { env: { ...env, ...extra }, cwd: box.dir });
    const row = async (id: string) =>
      (
        (await sql`select status, steps, ended_at, resumes from control.runs where id = ${id}`) as unknown as {
          status: string;
          steps: number;
          ended_at: Date | null;
          resumes: number;
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
    expect(await row(runId)).toEqual({
      status: 'succeeded',
      steps: end.steps,
      ended_at: new Date(end.ts),
      resumes: 1,
    });

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
    expect(await row(runId)).toEqual({
      status: 'succeeded',
      steps: end.steps,
      ended_at: new Date(end.ts),
      resumes: 1,
    });
    // A second sync sends the same run_resumed again: it is not a second resume.
    expect((await fabric(['control', 'sync', '--json'])).exitCode).toBe(0);
    expect(await row(runId)).toMatchObject({ status: 'succeeded', resumes: 1 });
  });

  it('shows a resumed run as running from its run_resumed on, before it ends again', async () => {
    // The resume reaches a request that never finishes: the run is resumed and going on.
    const [first, second] = CONVERSION_SCRIPT;
    const held = { reply: { reasoning: 'Thinking it over. '.repeat(8) }, endless: true };
    const { env, row, runId, logs, stopped } = await setUp([first, second, held, held] as ScriptedTurn[]);
    const resuming = spawnFabric(
      ['resume', runId, '--max-steps', '3', '--json', '--config', sandbox?.configPath ?? ''],
      { env, cwd: sandbox?.dir ?? '' },
    );
    cleanups.push(async () => {
      resuming.kill('SIGKILL');
      await resuming;
    });
    await vi.waitFor(async () => {
      expect((await logs.events(runId)).some((event) => event.kind === 'run_resumed')).toBe(true);
    }, PATIENCE);
    await vi.waitFor(async () => {
      expect(await row(runId)).toEqual({
        status: 'running',
        steps: stopped.steps,
        ended_at: null,
        resumes: 1,
      });
    }, PATIENCE);

    const elsewhere = join(sandbox?.dir ?? '', 'other-runs');
    await mkdir(elsewhere);
    const box = sandbox as Sandbox;
    const shown = await runFabricInProcess(['runs', 'show', runId, '--json', '--config', box.configPath], {
      env: { ...env, FABRIC_RUNS_DIR: elsewhere },
      cwd: box.dir,
    });
    expect(shown.exitCode, shown.stderr).toBe(0);
    const view = JSON.parse(shown.stdout) as Record<string, unknown>;
    expect(view).toMatchObject({ run_id: runId, status: 'running' });
    expect(view.ended_at ?? null).toBeNull();
  }, 300_000);
});

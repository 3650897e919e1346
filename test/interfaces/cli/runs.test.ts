import { readdir } from 'node:fs/promises';
import postgres from 'postgres';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunSummary } from '../../../src/application/runs/run-summary.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { embeddedControlDir } from '../../../src/infrastructure/control/open-control-store.ts';
import { PgliteControlStore } from '../../../src/infrastructure/control/pglite-control-store.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { RunHub } from '../../../src/interfaces/http/run-hub.ts';
import { lacksToolsRun, tempRunsDir, writeRunlog } from '../../infrastructure/control/fixtures.ts';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { makeFabric } from '../http/http-harness.ts';

const MODEL = 'qwen/qwen3-coder-30b';
// Waiting for another process to get somewhere, not a measure of speed.
const PATIENCE = { timeout: 60_000, interval: 50 };

interface Listing {
  source: string;
  notice?: string;
  runs: RunSummary[];
}

describe('fabric runs', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function fabric(args: readonly string[], env: Record<string, string>) {
    if (!sandbox) throw new Error('no sandbox');
    const out = await runFabricInProcess([...args, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(out.exitCode, out.stderr).toBe(0);
    return out;
  }

  async function list(env: Record<string, string>): Promise<Listing> {
    return JSON.parse((await fabric(['runs', '--json'], env)).stdout) as Listing;
  }

  it('shows a run whose process was killed mid-run as interrupted everywhere, and as running while it lived', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end());
    sandbox = await makeSandbox({ control: { enabled: true } });
    // The model is asked, and never answers: the run is in progress until it is killed.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [{ hang: true }],
    });
    const env = { ...testEnv(sandbox, llm.url), FABRIC_DSN: db.dsn };
    const child = spawnFabric(['run', '-s', 'units', '--config', sandbox.configPath, 'Convert 3 km'], {
      env,
      cwd: sandbox.dir,
    });
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await child;
    });
    const status = async (id: string) =>
      ((await sql`select status from control.runs where id = ${id}`) as unknown as { status: string }[])[0]
        ?.status;
    await vi.waitFor(() => expect(llm?.chatRequests()).toHaveLength(1), PATIENCE);
    const [runId] = (await readdir(sandbox.runsDir)).filter((name) => !name.startsWith('.'));
    if (runId === undefined) throw new Error('no run directory');
    await vi.waitFor(async () => expect(await status(runId)).toBe('running'), PATIENCE);

    const fabricForHttp = await makeFabric(sandbox, llm.url, { FABRIC_DSN: db.dsn });
    const hub = new RunHub(fabricForHttp);
    const app = createApp({ fabric: fabricForHttp, token: undefined, requireToken: false, hub });
    cleanups.push(() => fabricForHttp.close());
    cleanups.push(() => hub.close());
    const viaHttp = async () => (await (await app.request(`/v1/runs/${runId}`)).json()) as RunSummary;

    // Its process is alive: running, wherever it is shown.
    expect((await list(env)).runs).toEqual([expect.objectContaining({ run_id: runId, status: 'running' })]);
    expect(await viaHttp()).toMatchObject({ run_id: runId, status: 'running', live: false });

    child.kill('SIGKILL');
    expect((await child).signal).toBe('SIGKILL');
    // The store cannot know yet: its row stays running until a sync looks at the runlog.
    expect(await status(runId)).toBe('running');

    const listing = await list(env);
    expect(listing.source).toMatch(/^postgres .* and runlogs in /);
    expect(listing.runs).toEqual([
      expect.objectContaining({ run_id: runId, status: 'interrupted', ended_at: null }),
    ]);
    expect((await fabric(['runs'], env)).stdout).toMatch(new RegExp(`^${runId}\\s+interrupted\\s`));
    const shown = JSON.parse((await fabric(['runs', 'show', runId, '--json'], env)).stdout) as RunSummary;
    expect(shown).toMatchObject({ run_id: runId, status: 'interrupted', owner: { pid: child.pid } });
    expect(await viaHttp()).toMatchObject({ run_id: runId, status: 'interrupted', live: false });
    const httpList = (await (await app.request('/v1/runs')).json()) as { runs: RunSummary[] };
    expect(httpList.runs).toEqual([expect.objectContaining({ run_id: runId, status: 'interrupted' })]);

    const synced = JSON.parse((await fabric(['control', 'sync', '--json'], env)).stdout) as {
      runsInterrupted: number;
    };
    expect(synced.runsInterrupted).toBe(1);
    expect(await status(runId)).toBe('interrupted');
    const again = JSON.parse((await fabric(['control', 'sync', '--json'], env)).stdout) as {
      runsInterrupted: number;
    };
    expect(again.runsInterrupted).toBe(0);
  });

  it('lists a run that fabric run wrote while another process held the embedded control database', async () => {
    sandbox = await makeSandbox({ control: { enabled: true } });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const env = testEnv(sandbox, llm.url);
    // This test process holds the embedded database, as `fabric serve` would, and it has rows.
    const holder = new PgliteControlStore(embeddedControlDir(sandbox.runsDir));
    let held = true;
    cleanups.push(async () => {
      if (held) await holder.close();
    });
    await holder.migrate();
    const storedOnly = 'stored-only-run';
    await holder.write({
      events: await writeRunlog(await tempRunsDir(), storedOnly, '2020-06-01T10:00:00Z', lacksToolsRun()),
      modelCalls: [],
    });

    const run = await spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km'],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const { run_id } = JSON.parse(run.stdout) as RunResult;

    // Another process cannot open the store: it lists the runlogs, and says why.
    const whileHeld = await spawnFabric(['runs', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(whileHeld.exitCode, whileHeld.stderr).toBe(0);
    const fromLogs = JSON.parse(whileHeld.stdout) as Listing;
    expect(fromLogs.source).toBe(`runlogs in ${sandbox.runsDir}`);
    expect(fromLogs.notice).toMatch(/^the control plane \(pglite .*\) is not available: .*process \d+/);
    expect(fromLogs.runs).toEqual([expect.objectContaining({ run_id, status: 'succeeded' })]);

    await holder.close();
    held = false;
    // The store has only its own row; the runlog's run is listed with it, newest first.
    const merged = await list(env);
    expect(merged.source).toMatch(/^pglite .* and runlogs in /);
    expect(merged.runs.map((r) => [r.run_id, r.status])).toEqual([
      [run_id, 'succeeded'],
      [storedOnly, 'failed'],
    ]);
  });
  it('shows a run from its runlog: status, specialist, model, steps, tokens, duration and the result, summary first', async () => {
    sandbox = await makeSandbox();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const env = testEnv(sandbox, llm.url);
    const run = await spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km'],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as RunResult;
    const shown = (await fabric(['runs', 'show', result.run_id], env)).stdout;
    expect(shown).toMatch(new RegExp(`^${result.run_id}\n  status: +succeeded\n  specialist: +units\n`));
    expect(shown).toContain(`  model:      ${MODEL} (${result.backend})\n`);
    expect(shown).toContain('  steps:      3\n');
    expect(shown).toContain(`  tokens:     ${result.usage.total_tokens}\n`);
    expect(shown).toMatch(/ {2}duration: +\d+\.\d s\n/);
    expect(shown).toContain('  task:       Convert 3 km\n');
    expect(shown).toMatch(/ {2}runlog: +\S+runlog\.jsonl\n/);
    expect(shown).not.toContain('error:');
    expect(shown).toMatch(/\nresult:\n {2}Converted 3 km\.\n {2}answer: 1\.864114 mi\n$/);
    const json = JSON.parse(
      (await fabric(['runs', 'show', result.run_id, '--json'], env)).stdout,
    ) as RunSummary & {
      duration_ms: number;
      runlog: string;
    };
    expect(json).toMatchObject({ status: 'succeeded', model: MODEL, payload: result.payload, steps: 3 });
    expect(json.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it('shows a run only the control plane holds, with its model, error and where the record is', async () => {
    sandbox = await makeSandbox({ control: { enabled: true } });
    const env = testEnv(sandbox, 'http://127.0.0.1:9');
    const holder = new PgliteControlStore(embeddedControlDir(sandbox.runsDir));
    await holder.migrate();
    await holder.write({
      events: await writeRunlog(
        await tempRunsDir(),
        'stored-only-run',
        '2020-06-01T10:00:00Z',
        lacksToolsRun(),
      ),
      modelCalls: [],
    });
    await holder.close();
    const shown = (await fabric(['runs', 'show', 'stored-only-run'], env)).stdout;
    expect(shown).toMatch(/^stored-only-run\n {2}status: +failed\n/);
    expect(shown).toContain('  model:      gemma:2b (ollama http://127.0.0.1:11434)\n');
    expect(shown).toContain('  error:      model_lacks_tools: gemma:2b does not support tools.\n');
    expect(shown).toMatch(/ {2}runlog: +none on this machine; the record is the control plane's \(pglite /);
    expect(shown).toMatch(/\nresult: none recorded\n$/);
    const json = JSON.parse((await fabric(['runs', 'show', 'stored-only-run', '--json'], env)).stdout) as {
      runlog: null;
      status: string;
    };
    expect(json).toMatchObject({ runlog: null, status: 'failed' });
  });
});

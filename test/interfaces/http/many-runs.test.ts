import { readFile } from 'node:fs/promises';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { embeddedControlDir } from '../../../src/infrastructure/control/open-control-store.ts';
import { PgliteControlStore } from '../../../src/infrastructure/control/pglite-control-store.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { postJson } from './http-harness.ts';
import { until } from '../../support/until.ts';

// Generous: a loaded 2-core machine may take a while; only a run that never ends fails.
const LOADED_MS = 180_000;

const RUNS = 100;

const convert: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 2, from: 'km', to: 'm' } }] },
};
const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '2000 m' } }] },
};

/** Turns for `runs` runs of about five steps; whichever run gets a finish turn ends, so any interleaving works. */
function script(runs: number): ScriptedTurn[] {
  return Array.from({ length: runs }, () => [convert, convert, convert, convert, finish]).flat();
}

describe('many runs in one fabric serve process, with the default embedded control plane', () => {
  let sandbox: Sandbox;
  let llm: FakeLlmServer | undefined;
  beforeEach(async () => {
    // Runs take the script's turns in whatever order the limiter serves them: no run may hit the
    // step limit, nor be taken for stuck when it happens to get many of the same call in a row.
    sandbox = await makeSandbox({
      control: { enabled: true },
      loop: { max_steps: 500, stuck_repeats: 1000 },
    });
  });
  afterEach(async () => {
    await llm?.stop();
    await sandbox.cleanup();
  });

  it('mirrors 100 concurrent runs through one store, and backfills a run another process made meanwhile', async () => {
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      // A window no run fills: a run that happens to draw many converts in a row would otherwise
      // be summarised at the default 4,096, and the summary would take one of the script's turns.
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      script: [...script(RUNS), ...script(1)],
    });
    const env = testEnv(sandbox, llm.url);
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    let stderr = '';
    serve.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const url = await until(
        'the server to listen',
        async () => /listening on (http:\/\/\S+)/.exec(stderr)?.[1],
        LOADED_MS,
      );
      const started = await Promise.all(
        Array.from({ length: RUNS }, async (_, index) => {
          const response = await postJson(`${url}/v1/runs`, {
            specialist: 'units',
            task: `Convert ${index} km`,
          });
          expect(response.status).toBe(202);
          return ((await response.json()) as { run_id: string }).run_id;
        }),
      );
      const statuses = await Promise.all(
        started.map((id) =>
          until(
            `run ${id} to end`,
            async () => {
              const view = (await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string };
              return view.status === 'running' ? undefined : view.status;
            },
            LOADED_MS,
          ),
        ),
      );
      expect(new Set(statuses)).toEqual(new Set(['succeeded']));

      // The server is the embedded database's one holder: the lock names its process.
      const lock = await readFile(`${embeddedControlDir(sandbox.runsDir)}.lock`, 'utf8');
      expect(Number(lock)).toBe(serve.pid);

      // Another process runs while the server holds the store: a one-shot `fabric run` leaves
      // the embedded store alone and succeeds; the server writes its run in from the runlog.
      const other = await spawnFabric(['run', '--specialist', 'units', '--json', 'Convert 1 km'], {
        env: { ...env, FABRIC_CONFIG: sandbox.configPath },
        cwd: sandbox.dir,
      });
      expect(other.exitCode, `${other.stdout}\n${other.stderr}`).toBe(0);
      expect(other.stderr).not.toContain('control plane:');
      const runs = await until(
        'the other run to reach the store',
        async () => {
          const response = await fetch(`${url}/v1/exports/lm_insights_7d`);
          const insights = (await response.json()) as { totals: { runs: number } };
          return insights.totals.runs === RUNS + 1 ? insights.totals.runs : undefined;
        },
        LOADED_MS,
      );
      expect(runs).toBe(RUNS + 1);
      expect(stderr).not.toMatch(/db_off|unavailable/);
    } finally {
      serve.kill('SIGTERM');
      await serve;
    }
    expect(stderr).toContain('stopped');

    // Every run, row for row and event for event, is in the store the server closed.
    const store = new PgliteControlStore(embeddedControlDir(sandbox.runsDir));
    try {
      const runLogs = new FileRunLogStore(sandbox.runsDir);
      const ids = await runLogs.list();
      expect(ids).toHaveLength(RUNS + 1);
      const mirrored = await store.mirroredRuns();
      for (const id of ids) {
        const { events } = await runLogs.read(id);
        expect(mirrored.get(id), id).toMatchObject({ events: events.length, status: 'succeeded' });
      }
    } finally {
      await store.close();
    }
  }, 300_000);
});

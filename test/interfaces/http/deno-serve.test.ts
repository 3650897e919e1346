import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn } from '../../support/served.ts';
import { eventsOf, postJson, readSse } from './http-harness.ts';

describe('fabric serve under Deno 2', () => {
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await llm?.stop();
    await sandbox.cleanup();
  });

  it('serves the same API from the same sources: a run started, streamed to run_end and read back', async () => {
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const child = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env: testEnv(sandbox, llm.url),
      cwd: sandbox.dir,
      runtime: 'deno',
    });
    const { url } = await listeningOn(child);
    try {
      const started = await postJson(`${url}/v1/runs`, {
        specialist: 'units',
        task: 'Convert 3 km to miles',
      });
      expect(started.status).toBe(202);
      const { run_id } = (await started.json()) as { run_id: string };
      const events = eventsOf(await readSse(await fetch(`${url}/v1/runs/${run_id}/events`)));
      expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
      expect(events.map((event) => event.kind)).toContain('finish_rejected');
      expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
      const run = await (await fetch(`${url}/v1/runs/${run_id}`)).json();
      expect(run).toMatchObject({
        run_id,
        status: 'succeeded',
        steps: 3,
        payload: { answer: '1.864114 mi' },
      });
    } finally {
      child.kill('SIGTERM');
    }
    const result = await child;
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('stopped');
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE, sentRequest } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn } from '../../support/served.ts';

/**
 * SPEC §18: `fabric serve` itself SIGKILLed while a run it started waits for its second model
 * turn; a new `fabric serve` on the same config and runs directory goes on with it through
 * `POST /v1/runs/:id/resume`.
 */
const MODEL = 'qwen/qwen3-coder-30b';

describe('POST /v1/runs/:id/resume after fabric serve was killed', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const serves: ReturnType<typeof spawnFabric>[] = [];
  afterEach(async () => {
    for (const serve of serves.splice(0)) {
      serve.kill('SIGKILL');
      await serve;
    }
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function serve(env: Record<string, string>) {
    if (!sandbox) throw new Error('no sandbox');
    const child = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    serves.push(child);
    return { child, url: (await listeningOn(child)).url };
  }

  it('goes on with the same run id, asks no recorded turn again, and shows the last run_end', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    // The second request hangs: serve is killed while the run waits for that reply.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, { hang: true }, rejected, accepted],
    });
    const env = testEnv(sandbox, llm.url);
    const first = await serve(env);
    const started = await fetch(`${first.url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'units', task: 'Convert 3 km to miles' }),
    });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    const fake = llm;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(2), PATIENCE);
    first.child.kill('SIGKILL');
    expect((await first.child).signal).toBe('SIGKILL');
    const logs = new KilledRuns(sandbox, env);
    expect((await logs.events(runId)).map((event) => event.kind)).not.toContain('run_end');

    const second = await serve(env);
    const response = await fetch(`${second.url}/v1/runs/${runId}/resume`, { method: 'POST' });
    expect(response.status, await response.clone().text()).toBe(202);
    expect(response.headers.get('location')).toBe(`/v1/runs/${runId}`);
    expect(await response.json()).toMatchObject({ run_id: runId, status: 'running' });
    let view: Record<string, unknown> = {};
    await vi.waitFor(async () => {
      view = (await (await fetch(`${second.url}/v1/runs/${runId}`)).json()) as Record<string, unknown>;
      expect(view.status).toBe('succeeded');
    }, PATIENCE);

    const log = await logs.events(runId);
    const ends = log.filter((event) => event.kind === 'run_end');
    // serve was SIGKILLed: no run_end of its own; the resumed run's is the only one, and the view's.
    expect(ends).toHaveLength(1);
    expect(view).toMatchObject({ run_id: runId, status: 'succeeded', steps: ends[0]?.steps });
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      previous_status: 'interrupted',
      turn_asked_again: true,
    });
    // Four requests for three answers: only the turn that hung is asked again, byte for byte.
    expect(fake.chatRequests()).toHaveLength(4);
    expect(sentRequest(fake, 2)).toBe(sentRequest(fake, 1));
    expect(log.filter((event) => event.kind === 'llm_response')).toHaveLength(3);
    expect(log.filter((event) => event.kind === 'run_start')).toHaveLength(1);
    expect(log.map((event) => event.seq)).toEqual(log.map((_, i) => i + 1));
  });
});

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE, sentRequest } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn } from '../../support/served.ts';
import { eventsOf, readSse } from '../http/http-harness.ts';

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

  it("resume_run over serve's /mcp goes through the run hub: listed live, followed over SSE, cancelled on shutdown", async () => {
    sandbox = await makeSandbox();
    const [convert, rejected] = CONVERSION_SCRIPT;
    if (!convert || !rejected) throw new Error('script');
    // The run stops on max_steps; the resume reaches a turn that hangs until serve shuts down.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, rejected, { hang: true }, { hang: true }],
    });
    const env = testEnv(sandbox, llm.url);
    const { child, url } = await serve(env);
    const started = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'units', task: 'Convert 3 km to miles', max_steps: 1 }),
    });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    const logs = new KilledRuns(sandbox, env);
    await vi.waitFor(async () => {
      expect((await logs.events(runId)).at(-1)).toMatchObject({ kind: 'run_end', status: 'max_steps' });
    }, PATIENCE);

    const client = new Client({ name: 'resume-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    const called = client
      .callTool({ name: 'resume_run', arguments: { run_id: runId, max_steps: 3 } }, undefined, {
        timeout: 600_000,
      })
      .catch((error: unknown) => error);
    // Live in the hub: listed as running, and its events followed from the start to the new run_end.
    await vi.waitFor(async () => {
      const listed = (await (await fetch(`${url}/v1/runs`)).json()) as {
        runs: { run_id: string; status: string }[];
      };
      expect(listed.runs.find((run) => run.run_id === runId)?.status).toBe('running');
      expect((await logs.events(runId)).some((event) => event.kind === 'run_resumed')).toBe(true);
    }, PATIENCE);
    const following = readSse(await fetch(`${url}/v1/runs/${runId}/events`));
    const fake = llm;
    await vi.waitFor(() => expect(fake.chatRequests().length).toBeGreaterThanOrEqual(3), PATIENCE);
    child.kill('SIGTERM');
    const frames = eventsOf(await following);
    await child;
    await called;
    await client.close().catch(() => {});
    const kinds = frames.map((event) => event.kind);
    expect(kinds.filter((kind) => kind === 'run_end')).toHaveLength(2);
    expect(kinds.indexOf('run_resumed')).toBeGreaterThan(kinds.indexOf('run_end'));
    const log = await logs.events(runId);
    expect(frames).toEqual(log);
    // Shutdown ended the resumed run with a run_end of its own, as it does a run it started.
    expect(log.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
  });
});

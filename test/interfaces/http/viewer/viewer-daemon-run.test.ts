import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../../src/composition/fabric.ts';
import { type Sandbox, makeSandbox } from '../../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../../support/fake-llm-server.ts';
import { type RunningApi, makeFabric, postJson, startApi } from '../http-harness.ts';

/**
 * A run the OpenSpec daemon parked (`run_start.resumer: daemon`, SPEC §19), seen through a
 * `fabric serve` on the same runs directory: answered, it is the daemon's to go on with — the
 * server does not resume it, its page offers no Resume button but says who goes on, and
 * `POST /v1/runs/:id/resume` is refused with the reason.
 */
describe("the OpenSpec daemon's parked run, in a server beside it", () => {
  let sandbox: Sandbox;
  let llm: FakeLlmServer;
  let fabric: Fabric;
  let api: RunningApi;

  beforeAll(async () => {
    sandbox = await makeSandbox({ policy: { rules: [{ tool: 'convert_units', decision: 'ask' }] } });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 3, from: 'km', to: 'mi' } }] } },
      ],
    });
    fabric = await makeFabric(sandbox, llm.url);
    api = await startApi(fabric);
  }, 60_000);

  afterAll(async () => {
    await api?.stop();
    await fabric?.close();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  it('is left to the daemon once answered: no Resume button, the reason on a resume over HTTP', async () => {
    // As the daemon's runner starts it (specialist-task-runner.ts).
    const parked = await fabric.run({
      specialist: 'units',
      task: 'Convert 3 km to miles',
      signal: new AbortController().signal,
      defaultOnApproval: 'park',
      resumer: 'daemon',
    });
    expect(parked.status).toBe('awaiting_approval');
    await fabric.approvals.answer(parked.approval!.id, {
      state: 'approved',
      scope: 'once',
      pattern: 0,
      channel: 'cli',
      at: new Date().toISOString(),
    });
    const page = await (await fetch(`${api.url}/runs/${parked.run_id}`)).text();
    expect(page).toContain('id="daemon-resumes"');
    expect(page).not.toContain('id="resume-form"');
    const refused = await postJson(`${api.url}/v1/runs/${parked.run_id}/resume`, {});
    expect(refused.status).toBe(409);
    const body = (await refused.json()) as {
      error: { code: string; message: string; details?: { reason?: string } };
    };
    expect(body.error.code).toBe('run_not_resumable');
    expect(body.error.message).toContain("it is the OpenSpec daemon's run");
    expect(llm.chatRequests()).toHaveLength(1);
  });
});

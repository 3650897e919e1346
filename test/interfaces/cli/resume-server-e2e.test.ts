import { afterEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, sentRequest } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

/**
 * SPEC §18: a resumed run stays on the server it was on when that server still serves its model
 * (its prompt cache is there); otherwise the best available, `run_resumed` saying why. Two fake
 * LM Studio servers, the run killed on the first while its second turn is asked.
 */
const MODEL = 'qwen/qwen3-coder-30b';
const OTHER = 'qwen2.5-coder-7b-instruct';
const [CONVERT, REJECTED, ACCEPTED] = CONVERSION_SCRIPT;
if (!CONVERT || !REJECTED || !ACCEPTED) throw new Error('CONVERSION_SCRIPT has three turns');

describe('the server a resumed run goes on on', () => {
  const servers: FakeLlmServer[] = [];
  let sandbox: Sandbox | undefined;
  let runs: KilledRuns | undefined;
  afterEach(async () => {
    await runs?.stop();
    for (const server of servers.splice(0)) await server.stop();
    await sandbox?.cleanup();
  });

  async function start(options: Parameters<typeof startFakeLlmServer>[0]) {
    const server = await startFakeLlmServer(options);
    servers.push(server);
    return server;
  }

  /**
   * Both servers in LM_STUDIO_URL; the run started with `--model MODEL`, killed on `first` while
   * its second turn is asked, then `between`, then resumed; its `run_resumed`.
   */
  async function resumedAfter(first: FakeLlmServer, secondUrl: string, between: () => Promise<unknown>) {
    sandbox = await makeSandbox();
    runs = new KilledRuns(sandbox, testEnv(sandbox, `${first.url},${secondUrl}`));
    const runId = await runs.killWhen(
      ['-s', 'units', '--model', MODEL, 'Convert 3 km to miles'],
      () => first.chatRequests().length === 2,
    );
    await between();
    const out = await runs.resume([runId, '--json']);
    expect(out.exitCode, out.stderr).toBe(0);
    expect(JSON.parse(out.stdout) as RunResult).toMatchObject({ run_id: runId, status: 'succeeded' });
    const resumed = (await runs.events(runId)).find((event) => event.kind === 'run_resumed');
    if (resumed?.kind !== 'run_resumed') throw new Error('no run_resumed');
    return resumed;
  }

  /** A port nothing listens on now, for a server started later. */
  async function freePort(): Promise<number> {
    const placeholder = await startFakeLlmServer({ flavor: 'lm_studio' });
    await placeholder.stop();
    return Number(new URL(placeholder.url).port);
  }

  it('stays on the server it was on, which still serves its model, though another has it loaded', async () => {
    // The first has the model, not loaded (LM Studio loads it on the first request).
    const first = await start({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true, loaded: false }],
      script: [CONVERT, { hang: true }, REJECTED, ACCEPTED],
    });
    // The second is down while the run starts, and up with the model loaded when it is resumed:
    // by the best-available rule (loaded first) it would win.
    const port = await freePort();
    let second: FakeLlmServer | undefined;
    const resumed = await resumedAfter(first, `http://127.0.0.1:${port}`, async () => {
      second = await start({
        flavor: 'lm_studio',
        port,
        models: [{ id: MODEL, toolUse: true, loaded: true }],
      });
    });
    expect(resumed).toMatchObject({
      model: MODEL,
      backend: `lm_studio ${first.url}`,
      model_reason: `the server the run was on: ${MODEL} on lm_studio ${first.url}`,
    });
    expect(second?.chatRequests()).toEqual([]);
    // The turn it was asked when it died is asked again of the same server, byte for byte.
    expect(first.chatRequests()).toHaveLength(4);
    expect(sentRequest(first, 2)).toBe(sentRequest(first, 1));
  });

  it('goes on with the best available when that server is gone and no other has its model, and says why', async () => {
    const first = await start({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [CONVERT, { hang: true }],
    });
    const second = await start({
      flavor: 'lm_studio',
      models: [{ id: OTHER, toolUse: true }],
      script: [REJECTED, ACCEPTED],
    });
    const resumed = await resumedAfter(first, second.url, () => first.stop());
    expect(resumed).toMatchObject({ model: OTHER, backend: `lm_studio ${second.url}` });
    expect(resumed.model_reason).toBe(
      `the server the run was on (lm_studio ${first.url}) did not answer, and no other server has ${MODEL}; best available: ${OTHER} (tool-capable, loaded, size unknown), on lm_studio ${second.url}`,
    );
    // The conversation goes on as it was sent, on the other server.
    expect(second.chatRequests()).toHaveLength(2);
    const before = JSON.parse(sentRequest(first, 1)) as { messages: unknown[] };
    const after = JSON.parse(sentRequest(second, 0)) as { messages: unknown[] };
    expect(after.messages).toEqual(before.messages);
  });
});

import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { createFabric, loadConfig } from '../../src/index.ts';
import { embeddedControlDir } from '../../src/infrastructure/control/open-control-store.ts';
import { PgliteControlStore } from '../../src/infrastructure/control/pglite-control-store.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../support/fake-llm-server.ts';

const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Converted.', answer: '1000 m' } }] },
};

describe('createFabric, for embedding applications', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  async function fabricFor(script: ScriptedTurn[], extra: Record<string, unknown> = {}) {
    server = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: 'm', toolUse: true }], script });
    sandbox = await makeSandbox(extra);
    const config = await loadConfig({
      configPath: sandbox.configPath,
      cwd: sandbox.dir,
      env: testEnv(sandbox, server.url),
    });
    return createFabric(config);
  }

  it('shares one embedded control store between its runs and leaves every row written when closed', async () => {
    const fabric = await fabricFor([finish, finish, finish], { control: { enabled: true } });
    const store = await fabric.controlStore();
    expect(store?.kind).toBe('pglite');
    const results = await Promise.all(
      ['a', 'b', 'c'].map((task) =>
        fabric.run({ specialist: 'units', task, signal: new AbortController().signal }),
      ),
    );
    expect(await fabric.controlStore()).toBe(store);
    await fabric.close();
    const reopened = new PgliteControlStore(embeddedControlDir(sandbox!.runsDir));
    try {
      const mirrored = await reopened.mirroredRuns();
      for (const result of results) expect(mirrored.get(result.run_id)?.status).toBe('succeeded');
    } finally {
      await reopened.close();
    }
  });

  it('closes only after the runs in progress have written their run_end, and then refuses new runs', async () => {
    const fabric = await fabricFor([{ hang: true }]);
    const controller = new AbortController();
    const run = fabric.run({ specialist: 'units', task: 'hangs', signal: controller.signal });
    for (let i = 0; i < 200 && server!.chatRequests().length === 0; i += 1)
      await new Promise((resolve) => setTimeout(resolve, 25));
    let closed = false;
    const closing = fabric.close().then(() => {
      closed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(closed).toBe(false);
    controller.abort();
    await closing;
    const result = await run;
    expect(result.status).toBe('cancelled');
    const text = await readFile(result.runlog, 'utf8');
    expect(parseRunlog(text, result.runlog).events.at(-1)).toMatchObject({
      kind: 'run_end',
      status: 'cancelled',
    });
    await expect(
      fabric.run({ specialist: 'units', task: 'late', signal: new AbortController().signal }),
    ).rejects.toThrow(/closed/);
  });

  it('says what a hand-built request lacks instead of failing deep inside (a JavaScript caller)', async () => {
    const fabric = await fabricFor([finish]);
    try {
      const missing = { specialist: 'units', task: 'Convert 1 km to m' } as unknown as Parameters<
        typeof fabric.run
      >[0];
      await expect(fabric.run(missing)).rejects.toMatchObject({
        code: 'usage',
        message: expect.stringMatching(/request\.signal must be an AbortSignal/),
      });
      const noTask = { specialist: 'units', task: ' ', signal: new AbortController().signal };
      await expect(fabric.run(noTask)).rejects.toMatchObject({
        code: 'usage',
        message: expect.stringMatching(/request\.task/),
      });
      expect(server?.chatRequests()).toEqual([]);
    } finally {
      await fabric.close();
    }
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { Fabric } from '../../src/interfaces/compose.ts';
import { type Sandbox, makeSandbox, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 25));
  expect(condition()).toBe(true);
}

describe('llm.max_concurrent_requests across the runs of one Fabric', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('holds a second run’s request until the first one’s is done', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'm', toolUse: true }],
      script: [
        { hang: true },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 's', answer: 'a' } }] } },
      ],
    });
    sandbox = await makeSandbox({ llm: { max_concurrent_requests: 1, retry: { max_attempts: 1 } } });
    const config = await loadConfig({
      configPath: sandbox.configPath,
      cwd: sandbox.dir,
      env: testEnv(sandbox, server.url),
    });
    const fabric = new Fabric(config);
    const first = new AbortController();
    const a = fabric.run({ specialist: 'units', task: 'a', signal: first.signal });
    await until(() => server?.chatRequests().length === 1);
    const b = fabric.run({ specialist: 'units', task: 'b', signal: new AbortController().signal });
    await until(() => fabric.limiter.waiting === 1);
    expect(server.chatRequests()).toHaveLength(1);
    first.abort();
    expect((await a).status).toBe('cancelled');
    expect((await b).status).toBe('succeeded');
    expect(server.chatRequests()).toHaveLength(2);
  });
});

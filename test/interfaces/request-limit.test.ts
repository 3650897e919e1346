import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import type { RunObserver } from '../../src/application/ports.ts';
import { createFabric, Fabric } from '../../src/composition/fabric.ts';
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

  it('serves the runs that started first before later ones, so they finish first', async () => {
    const convert = {
      reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'km', to: 'm' } }] },
      delayMs: 20,
    };
    // Three runs of 2 steps and a final finish-only turn each: 9 requests, all alike.
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'm', toolUse: true }],
      script: Array.from({ length: 9 }, () => convert),
    });
    sandbox = await makeSandbox({ llm: { max_concurrent_requests: 1, retry: { max_attempts: 1 } } });
    const config = await loadConfig({
      configPath: sandbox.configPath,
      cwd: sandbox.dir,
      env: testEnv(sandbox, server.url),
    });
    const fabric = createFabric(config);
    const seen: string[] = [];
    const watch = (name: string): RunObserver => ({
      onEvent: (event) => {
        if (event.kind === 'llm_response' || event.kind === 'run_end') seen.push(`${name}:${event.kind}`);
      },
      onText() {},
      onToolCallStarted() {},
    });
    const start = (name: string) =>
      fabric.run({
        specialist: 'units',
        task: name,
        maxSteps: 2,
        observers: [watch(name)],
        signal: new AbortController().signal,
      });
    const a = start('a');
    await until(() => server?.chatRequests().length === 1);
    const b = start('b');
    await until(() => fabric.limiter.waiting === 1);
    const c = start('c');
    await until(() => fabric.limiter.waiting === 2);
    const results = await Promise.all([a, b, c]);
    await fabric.close();
    expect(results.map((result) => result.status)).toEqual(['max_steps', 'max_steps', 'max_steps']);
    const ends = seen.filter((entry) => entry.endsWith('run_end'));
    expect(ends).toEqual(['a:run_end', 'b:run_end', 'c:run_end']);
    // First come, first served would interleave all three; by start order, c waits for a to end.
    expect(seen.indexOf('c:llm_response')).toBeGreaterThan(seen.indexOf('a:run_end'));
  });
});

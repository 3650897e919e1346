import { afterEach, describe, expect, it } from 'vitest';
import { createFabric } from '../../src/composition/fabric.ts';
import { loadConfig } from '../../src/config/load.ts';
import { type Sandbox, makeSandbox, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../support/fake-llm-server.ts';

/**
 * SPEC §17: runs on one server are not sent more requests at once than the loaded model serves
 * in parallel (LM Studio's loaded_instances[].config.parallel); the rest wait their turn.
 */
const RUNS = 4;
const turn = (i: number): ScriptedTurn => ({
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: i, from: 'km', to: 'm' } }] },
  delayMs: 40,
});
const finish: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 's', answer: 'a' } }] },
  delayMs: 40,
};

describe("a server's parallel slots", () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it.each([1, 2])(
    'sends at most %i request(s) at once to a model loaded with that many slots',
    async (parallel) => {
      server = await startFakeLlmServer({
        flavor: 'lm_studio',
        lmStudioV1Api: true,
        models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, parallel }],
        // Each run takes two turns: a call and its finish, in whatever order the runs come.
        respond: ({ messages }) => (messages.some((m) => m.role === 'tool') ? finish : turn(messages.length)),
      });
      sandbox = await makeSandbox({ llm: { max_concurrent_requests: 8 } });
      const config = await loadConfig({
        configPath: sandbox.configPath,
        cwd: sandbox.dir,
        env: testEnv(sandbox, server.url),
      });
      const fabric = createFabric(config);
      try {
        const results = await Promise.all(
          Array.from({ length: RUNS }, (_, i) =>
            fabric.run({ specialist: 'units', task: `run ${i}`, signal: new AbortController().signal }),
          ),
        );
        expect(results.map((result) => result.status)).toEqual(Array(RUNS).fill('succeeded'));
        expect(server.chatRequests()).toHaveLength(RUNS * 2);
        expect(server.maxChatsInFlight()).toBe(parallel);
      } finally {
        await fabric.close();
      }
    },
  );
});

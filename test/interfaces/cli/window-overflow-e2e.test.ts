import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { runUnits } from '../../support/units-run.ts';

/**
 * The servers' real answers to a prompt over the model's window, enforced by the fakes: each is
 * diagnosed as context_overflow after one request, never retried as a dead server. The servers
 * report a window the run fits (so it is not refused as context_too_small) but hold less, as
 * LM Studio 0.4.x's auto-fit does silently.
 */
describe('a prompt over the model window', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it.each([
    ['LM Studio, streaming (200, event: error)', 'lm_studio', /Input does not fit in context length/],
    ['Ollama /api/chat, truncate: false (400)', 'ollama', /the input length exceeds the context length/],
  ] as const)('%s is context_overflow at once', async (_name, flavor, said) => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor,
      models: [
        flavor === 'ollama'
          ? { id: 'qwen3:8b', toolUse: true, enforceWindow: 16 }
          : { id: 'qwen/qwen3-coder-30b', toolUse: true, enforceWindow: 16 },
      ],
      script: [],
    });
    const { exitCode, result } = await runUnits(sandbox, server, flavor);
    expect(exitCode, JSON.stringify(result.error)).toBe(1);
    expect(result.error?.code).toBe('context_overflow');
    expect(result.error?.message).toMatch(said);
    expect(server.chatRequests()).toHaveLength(1);
  });
});

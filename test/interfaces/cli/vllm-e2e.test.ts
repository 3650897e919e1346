import { afterEach, describe, expect, it } from 'vitest';
import type { Sandbox } from '../../support/fabric-cli.ts';
import { startFakeVllm } from '../../support/fake-llm-compat.ts';
import type { FakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_KINDS, CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { backendsSandbox, runUnitsOnBackends } from '../../support/units-run.ts';

/**
 * Issue 27: vLLM as a backend of `llm.backends`, through the CLI: its models and windows from
 * /v1/models (`max_model_len`), and the 400 of a server started without tool calling, whose flat
 * body (`{"object":"error","message":…}`) the `openai` package would have dropped, explained
 * with the fix and not retried.
 */
const MODEL = { id: 'Qwen/Qwen3-Coder-30B-A3B-Instruct', contextLength: 32768 };

describe('fabric on vLLM', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('runs the units task at the window vLLM serves (max_model_len)', async () => {
    server = await startFakeVllm({ models: [MODEL], script: CONVERSION_SCRIPT });
    sandbox = await backendsSandbox([{ kind: 'vllm', url: server.url, name: 'gpu' }]);
    const { result, events, exitCode } = await runUnitsOnBackends(sandbox);
    expect(exitCode).toBe(0);
    expect(result.status).toBe('succeeded');
    expect(events.map((event) => event.kind)).toEqual(CONVERSION_KINDS);
    expect(events[0]).toMatchObject({ model: MODEL.id, backend: `vllm ${server.url}`, window_tokens: 32768 });
  });

  it('explains the tools-disabled 400 with the flags to start vLLM with, after one request', async () => {
    server = await startFakeVllm({ models: [MODEL], toolCalling: false });
    sandbox = await backendsSandbox([{ kind: 'vllm', url: server.url }]);
    const { result, exitCode, events } = await runUnitsOnBackends(sandbox);
    expect(exitCode).toBe(4);
    expect(result.error?.code).toBe('model_lacks_tools');
    // The server's own words (from the flat body) and the fix.
    expect(result.error?.message).toContain(
      'the server said: "auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    );
    expect(result.error?.message).toContain(
      'vllm serve <model> --enable-auto-tool-choice --tool-call-parser <parser>',
    );
    expect(result.error?.message).not.toContain('no body');
    // Never retried: a restart of the server is the only fix.
    expect(server.chatRequests()).toHaveLength(1);
    expect(events.some((event) => event.kind === 'llm_retry')).toBe(false);
  });
});

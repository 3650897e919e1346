import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, testEnv } from '../../support/fabric-cli.ts';
import { startFakeKeyed, startFakeLlamaServer, startFakeVllm } from '../../support/fake-llm-compat.ts';
import type { FakeLlmServer, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { exampleCrate, runRust, rustSandbox } from '../../support/rust-run.ts';

/**
 * Issue 27's "done when": a rust run on each new backend — llama-server, vLLM and a keyed
 * endpoint (named with --model: a hosted model is never chosen on its own) — writes its file,
 * passes the finish gate (cargo check) and records the backend's kind.
 */
const PLAN = 'Step one.\nStep two.';
const KEY = 'sk-rust-run-KEY-0000111122223333';
const SCRIPT: ScriptedTurn[] = [
  { reply: { toolCalls: [{ name: 'write_file', arguments: { path: 'PLAN.md', content: PLAN } }] } },
  {
    reply: {
      toolCalls: [
        {
          name: 'finish_task',
          arguments: { summary: 'Wrote the plan.', artifacts: ['PLAN.md'], next_steps: [], notes: '' },
        },
      ],
    },
  },
];

const CASES: [string, () => Promise<FakeLlmServer>, string[]][] = [
  [
    'llama_cpp',
    () =>
      startFakeLlamaServer({ model: { id: 'qwen3-coder.gguf', contextLength: 32768 }, script: [...SCRIPT] }),
    [],
  ],
  [
    'vllm',
    () => startFakeVllm({ models: [{ id: 'Qwen/Qwen3-Coder-30B-A3B-Instruct' }], script: [...SCRIPT] }),
    [],
  ],
  [
    'openai',
    () => startFakeKeyed({ key: KEY, modelIds: ['gpt-5-mini', 'gpt-5'], script: [...SCRIPT] }),
    ['--model', 'gpt-5'],
  ],
];

describe('fabric run --specialist rust on each backend of llm.backends', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it.each(CASES)('succeeds on %s', async (kind, start, args) => {
    workspace = await exampleCrate();
    server = await start();
    sandbox = await rustSandbox({
      llm: {
        retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
        probe_timeout_ms: 1000,
        backends: [{ kind, url: server.url, ...(kind === 'openai' ? { api_key_env: 'RUST_RUN_KEY' } : {}) }],
      },
    });
    const env = { ...testEnv(sandbox, 'http://127.0.0.1:9'), RUST_RUN_KEY: KEY };
    const { run, events, stderr, stdout } = await runRust(sandbox, workspace, env, 'Write the plan', args);
    expect(run.status, stderr).toBe('succeeded');
    expect(run.payload).toMatchObject({ summary: 'Wrote the plan.' });
    expect(await readFile(join(workspace, 'PLAN.md'), 'utf8')).toBe(PLAN);
    expect(events[0]).toMatchObject({ kind: 'run_start', backend: `${kind} ${server.url}` });
    expect(events.filter((event) => event.kind === 'finish_rejected')).toEqual([]);
    expect(stdout + stderr + JSON.stringify(events)).not.toContain(KEY);
  });
});

/**
 * Issue 35: every backend kind knows its run's window, and SPEC §17 holds on each. A rust run on
 * a model with an 8k window reads a file several times that window; each fake refuses, as its
 * server does, any request over the window. The run succeeds, and `run_start` names the window
 * and where it came from: LM Studio's loaded context, Ollama's num_ctx as sent (the model not
 * loaded, so only its trained length says it), llama-server's /props n_ctx, vLLM's max_model_len,
 * Ollama behind its /v1 (its /api/ps context_length: /v1 cannot set num_ctx), and a keyed
 * endpoint's catalog context_length.
 */
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closedPort } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, testEnv } from '../../support/fabric-cli.ts';
import { startFakeKeyed, startFakeLlamaServer, startFakeVllm } from '../../support/fake-llm-compat.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate, runRust, rustSandbox } from '../../support/rust-run.ts';

const WINDOW = 8192;
/** About 100 KB: several times an 8k window, whatever the tokenizer. */
const NOTES = Array.from(
  { length: 1600 },
  (_, i) => `// note ${i}: damage tracking per output, region ${i}, repaint pending`,
).join('\n');

const SCRIPT: ScriptedTurn[] = [
  { reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] } },
  {
    reply: {
      toolCalls: [
        {
          name: 'finish_task',
          arguments: { summary: 'Read the notes.', artifacts: [], next_steps: [], notes: '' },
        },
      ],
    },
  },
];

interface Case {
  readonly name: string;
  readonly model: string;
  readonly source: RegExp;
  start(): Promise<FakeLlmServer>;
  /** The config's `llm` and the environment's backend variables, given the fake's url. */
  wire(url: string, closed: string): { llm?: Record<string, unknown>; env: Record<string, string> };
}

const RETRY = { max_attempts: 2, base_delay_ms: 5, max_delay_ms: 20 };
const KEY = 'sk-window-test-0000111122223333';
const model = (id: string) => ({ id, toolUse: true, contextLength: WINDOW, enforceWindow: true });

const CASES: Case[] = [
  {
    name: 'LM Studio',
    model: 'qwen/qwen3-coder-30b',
    source: /LM Studio's loaded context length/,
    start: () =>
      startFakeLlmServer({
        flavor: 'lm_studio',
        lmStudioV1Api: true,
        models: [model('qwen/qwen3-coder-30b')],
        script: [...SCRIPT],
      }),
    wire: (url) => ({ env: { LM_STUDIO_URL: url } }),
  },
  {
    name: 'Ollama (native /api/chat)',
    model: 'qwen2.5-coder:7b',
    source: /Ollama's num_ctx as sent/,
    start: () =>
      startFakeLlmServer({
        flavor: 'ollama',
        // Not loaded: /api/ps says nothing; the trained length caps num_ctx.
        models: [
          {
            id: 'qwen2.5-coder:7b',
            toolUse: true,
            loaded: false,
            maxContextLength: WINDOW,
            enforceWindow: true,
          },
        ],
        script: [...SCRIPT],
      }),
    wire: (url, closed) => ({ env: { LM_STUDIO_URL: closed, OLLAMA_HOST: url } }),
  },
  {
    name: 'llama-server',
    model: 'qwen2.5-coder-7b-q4',
    source: /llama-server's \/props n_ctx \(per slot\)/,
    start: () =>
      startFakeLlamaServer({
        model: { ...model('qwen2.5-coder-7b-q4'), maxContextLength: 32_768 },
        script: [...SCRIPT],
      }),
    wire: (url, closed) => ({
      llm: { retry: RETRY, probe_timeout_ms: 2000, backends: [{ kind: 'llama_cpp', url }] },
      env: { LM_STUDIO_URL: closed },
    }),
  },
  {
    name: 'vLLM',
    model: 'Qwen/Qwen2.5-Coder-7B-Instruct',
    source: /vLLM's max_model_len/,
    start: () => startFakeVllm({ models: [model('Qwen/Qwen2.5-Coder-7B-Instruct')], script: [...SCRIPT] }),
    wire: (url, closed) => ({
      llm: { retry: RETRY, probe_timeout_ms: 2000, backends: [{ kind: 'vllm', url }] },
      env: { LM_STUDIO_URL: closed },
    }),
  },
  {
    name: 'Ollama (OpenAI-compatible /v1)',
    model: 'qwen2.5-coder:7b',
    source: /Ollama's \/api\/ps context_length \(through \/v1/,
    // Loaded at 8k (/api/ps); its /v1/models says no window, and /v1 cannot set num_ctx.
    start: () =>
      startFakeLlmServer({
        flavor: 'ollama',
        models: [{ ...model('qwen2.5-coder:7b'), maxContextLength: 32_768 }],
        script: [...SCRIPT],
      }),
    wire: (url, closed) => ({
      llm: { retry: RETRY, probe_timeout_ms: 2000, backends: [{ kind: 'openai', url }] },
      env: { LM_STUDIO_URL: closed },
    }),
  },
  {
    name: 'a keyed endpoint whose catalog lists context_length',
    model: 'qwen/qwen-2.5-coder-32b-instruct',
    source: /the endpoint's catalog context_length/,
    start: () =>
      startFakeKeyed({
        key: KEY,
        modelIds: ['qwen/qwen-2.5-coder-32b-instruct'],
        contextLength: WINDOW,
        script: [...SCRIPT],
      }),
    wire: (url, closed) => ({
      llm: {
        retry: RETRY,
        probe_timeout_ms: 2000,
        backends: [{ kind: 'openai', url, api_key_env: 'WINDOW_TEST_KEY' }],
      },
      env: { LM_STUDIO_URL: closed, WINDOW_TEST_KEY: KEY },
    }),
  },
];

describe('an 8k window on every backend kind', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it.each(CASES)('$name: the run knows its window, budgets the file to it and succeeds', async (kind) => {
    workspace = await exampleCrate();
    await writeFile(join(workspace, 'notes.txt'), NOTES);
    expect(NOTES.length / 4).toBeGreaterThan(WINDOW * 3);
    server = await kind.start();
    const closed = `http://127.0.0.1:${await closedPort()}`;
    const { llm, env } = kind.wire(server.url, closed);
    sandbox = await rustSandbox(llm === undefined ? {} : { llm });
    const { run, events, stderr } = await runRust(
      sandbox,
      workspace,
      { ...testEnv(sandbox, closed), ...env },
      'Read notes.txt',
      ['--model', kind.model],
    );
    expect(run.status, `${stderr}\n${JSON.stringify(run.error)}`).toBe('succeeded');
    const start = events[0];
    expect(start).toMatchObject({ kind: 'run_start', window_tokens: WINDOW });
    expect(start?.kind === 'run_start' ? start.window_source : undefined).toMatch(kind.source);
    // The file was cut to its share of the window, and every request fitted (the fake refuses
    // one that does not, as the server does).
    const read = events.find((event) => event.kind === 'tool_result' && event.tool === 'read_file');
    expect(read).toMatchObject({ kept: { chars: NOTES.length } });
    expect(server.chatRequests()).toHaveLength(2);
  });
});

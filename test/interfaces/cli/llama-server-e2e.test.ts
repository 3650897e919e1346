import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { startFakeLlamaServer } from '../../support/fake-llm-compat.ts';
import type { FakeLlmServer, ScriptedTurn } from '../../support/fake-llm-server.ts';
import { CONVERSION_KINDS, CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { backendsSandbox, runUnitsOnBackends } from '../../support/units-run.ts';

/**
 * Issue 27: llama.cpp's llama-server as a backend of `llm.backends`, through the CLI. Its model
 * from /v1/models, window and slots from /props, tool calls through the OpenAI route, `timings`
 * recorded with the usage, and a server still loading its model waited out.
 */
const MODEL = {
  id: 'qwen3-coder-30b-a3b-q4_k_m.gguf',
  paramSize: '30B',
  contextLength: 16384,
  maxContextLength: 262144,
};
/** The conversion script with llama-server's timings on each turn: the cache serves the repeated prefix. */
const SCRIPT: ScriptedTurn[] = CONVERSION_SCRIPT.map((turn, i) =>
  'reply' in turn
    ? { ...turn, reply: { ...turn.reply, timings: { cache_n: i * 90, prompt_n: 100 + i * 50 - i * 90 } } }
    : turn,
);

describe('fabric on llama-server', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('runs the units task with tool calls through /v1/chat/completions and records cache_n with the usage', async () => {
    server = await startFakeLlamaServer({ model: MODEL, script: SCRIPT, slots: 4 });
    sandbox = await backendsSandbox([{ kind: 'llama_cpp', url: `${server.url}/v1`, name: 'box' }]);
    const { result, events, exitCode } = await runUnitsOnBackends(sandbox);
    expect(exitCode).toBe(0);
    expect(result.status).toBe('succeeded');
    expect(events.map((event) => event.kind)).toEqual(CONVERSION_KINDS);
    expect(events[0]).toMatchObject({
      kind: 'run_start',
      model: MODEL.id,
      backend: `llama_cpp ${server.url}`,
      // The window is the one llama-server runs at (/props n_ctx), not a guess.
      window_tokens: 16384,
    });
    const usages = events.flatMap((event) => (event.kind === 'llm_response' ? [event.usage] : []));
    expect(usages.map((usage) => usage.cached_tokens)).toEqual([0, 90, 180]);
    const chat = server.chatRequests()[0]?.body as { tools?: unknown[]; stream?: boolean };
    expect(chat.stream).toBe(true);
    expect(chat.tools?.length).toBeGreaterThan(0);
  });

  it('shows the backend in fabric models and health lm with its kind, window, slots and tools', async () => {
    server = await startFakeLlamaServer({ model: MODEL, slots: 4 });
    sandbox = await backendsSandbox([{ kind: 'llama_cpp', url: server.url }]);
    const env = testEnv(sandbox, 'http://127.0.0.1:9');
    const models = await runFabricInProcess(['models', '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(models.exitCode).toBe(0);
    const out = JSON.parse(models.stdout);
    const llama = out.backends.find((b: { backend: string }) => b.backend === 'llama_cpp');
    expect(llama).toMatchObject({ name: 'llama_cpp', base_url: server.url, hosted: false, ok: true });
    expect(llama.models[0]).toMatchObject({
      id: MODEL.id,
      tool_use: true,
      params_b: 30,
      context_length: 16384,
      max_context_length: 262144,
      parallel: 4,
      chosen: true,
    });
    const health = await runFabricInProcess(['health', 'lm', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(health.exitCode).toBe(0);
    expect(health.stdout).toMatch(
      new RegExp(`llama_cpp ${server.url}\\s+up\\s+\\d+ ms\\s+1 model, 1 usable, 1 with tools, window 16384`),
    );
  });

  it('waits out "Loading model" with backoff, saying so, then runs', async () => {
    server = await startFakeLlamaServer({ model: MODEL, script: CONVERSION_SCRIPT, loadingRequests: 3 });
    sandbox = await backendsSandbox([{ kind: 'llama_cpp', url: server.url }]);
    const { result, stderr } = await runUnitsOnBackends(sandbox);
    expect(result.status).toBe('succeeded');
    expect(stderr).toContain(`llama_cpp (llama_cpp ${server.url}) is loading its model; waiting for it.`);
    expect(stderr.match(/is loading its model/g)).toHaveLength(1);
    const health = server.requests.filter((r) => r.path === '/health').map((r) => r.receivedAt);
    expect(health).toHaveLength(4);
    // Each wait at least as long as the one before (250 ms, doubling).
    const gaps = health.slice(1).map((at, i) => at - (health[i] ?? at));
    expect(gaps[0]).toBeGreaterThanOrEqual(200);
    expect(gaps[2]).toBeGreaterThanOrEqual(gaps[0] ?? 0);
  });

  it('reports a loading server at once in fabric health lm, without waiting', async () => {
    server = await startFakeLlamaServer({ model: MODEL, loadingRequests: 1000 });
    sandbox = await backendsSandbox([{ kind: 'llama_cpp', url: server.url }]);
    const env = testEnv(sandbox, 'http://127.0.0.1:9');
    const health = await runFabricInProcess(['health', 'lm', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(health.exitCode).toBe(4);
    expect(health.stdout).toMatch(
      /llama_cpp http:\/\/127\.0\.0\.1:\d+\s+loading\s+\d+ ms\s+loading its model \(HTTP 503 "Loading model"\); a run waits for it/,
    );
    expect(server.requests.filter((r) => r.path === '/health')).toHaveLength(1);
  });

  it('fails clearly when the model is still loading after load_wait_s', async () => {
    server = await startFakeLlamaServer({ model: MODEL, loadingRequests: 1000 });
    sandbox = await backendsSandbox([{ kind: 'llama_cpp', url: server.url, load_wait_s: 1 }]);
    const { result, exitCode } = await runUnitsOnBackends(sandbox);
    expect(exitCode).toBe(4);
    expect(result.error).toMatchObject({
      code: 'backend_unavailable',
      message: expect.stringMatching(
        /llama_cpp http:\/\/127\.0\.0\.1:\d+: unreachable \(still loading its model when the wait ran out \(load_wait_s: 1 s; raise it/,
      ),
    });
  });
});

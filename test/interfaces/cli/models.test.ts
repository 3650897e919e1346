import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runFabricInProcess } from '../../support/fabric-cli.ts';
import { closedPortUrl, fake, stopFakesAfterEach } from '../../infrastructure/llm/llm-test-kit.ts';

stopFakesAfterEach();
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Runs the CLI in-process in a temp dir whose fabric.yaml has short probe timeouts. */
async function fabric(args: string[], env: Record<string, string>) {
  const cwd = await mkdtemp(join(tmpdir(), 'fabric-models-'));
  dirs.push(cwd);
  await writeFile(
    join(cwd, 'fabric.yaml'),
    stringify({
      llm: {
        probe_timeout_ms: 800,
        retry: { max_attempts: 2, base_delay_ms: 1, max_delay_ms: 2 },
        models: { coder: 'qwen2.5-coder:7b' },
      },
      specialists: { dev: { builder: 'builtin:rust', model: 'coder' } },
    }),
  );
  return runFabricInProcess(args, { env: { NO_COLOR: '1', ...env }, cwd });
}

describe('fabric models', () => {
  it('--json lists every backend and model, and which one a run would use and why', async () => {
    const lm = await fake({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [
        {
          id: 'qwen/qwen3-coder-30b',
          toolUse: true,
          paramSize: '30B',
          contextLength: 8192,
          maxContextLength: 262144,
        },
        { id: 'text-embedding-nomic-embed-text-v1.5', type: 'embedding' },
      ],
    });
    const ollama = await fake({
      flavor: 'ollama',
      models: [
        { id: 'qwen2.5-coder:7b', toolUse: true, paramSize: '7.6B', loaded: false },
        { id: 'gemma:2b', paramSize: '2B' },
      ],
    });
    const down = await closedPortUrl();
    const { exitCode, stdout } = await fabric(['models', '--json'], {
      LM_STUDIO_URL: `${lm.url},${down}/v1`,
      OLLAMA_HOST: ollama.url,
    });
    expect(exitCode).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.backends.map((b: { backend: string; ok: boolean }) => [b.backend, b.ok])).toEqual([
      ['lm_studio', true],
      ['lm_studio', false],
      ['ollama', true],
    ]);
    expect(out.backends[0].models[0]).toEqual({
      id: 'qwen/qwen3-coder-30b',
      type: 'llm',
      tool_use: true,
      loaded: true,
      params_b: 30,
      context_length: 8192,
      max_context_length: 262144,
      // The catalog does not say whether it thinks; the profile its publisher recommends (SPEC §16).
      thinking: null,
      // LM Studio v1's loaded_instances[].config.parallel: the requests it serves at once.
      parallel: 4,
      profile: {
        matched: ['*qwen3*coder*'],
        source: 'Qwen3-Coder model card, Best Practices',
        settings: { temperature: 0.7, top_p: 0.8, top_k: 20 },
        think_sent: null,
      },
      chosen: true,
      // Never probed here: no model card (SPEC §20).
      card: null,
    });
    expect(out.backends[1].error).toMatch(/fetch failed|ECONNREFUSED/);
    expect(out.backends[2].models.find((m: { id: string }) => m.id === 'gemma:2b')).toMatchObject({
      tool_use: null,
    });
    // Tool-capable and loaded beats tool-capable but unloaded, even though it is bigger.
    expect(out.chosen).toMatchObject({ id: 'qwen/qwen3-coder-30b', backend: 'lm_studio', base_url: lm.url });
    expect(out.chosen.reason).toContain(
      'best available: qwen/qwen3-coder-30b (tool-capable, loaded, 30B parameters)',
    );
    expect(out.error).toBeNull();
  });

  it('--specialist chooses its configured model (an alias, with the :latest rule)', async () => {
    const ollama = await fake({
      flavor: 'ollama',
      models: [
        { id: 'qwen2.5-coder:7b', toolUse: true },
        { id: 'llama3.2:latest', toolUse: true, paramSize: '3.2B' },
      ],
    });
    const { exitCode, stdout } = await fabric(['models', '--specialist', 'dev'], {
      LM_STUDIO_URL: await closedPortUrl(),
      OLLAMA_HOST: ollama.url,
    });
    expect(exitCode).toBe(0);
    expect(stdout).toContain(`Would use qwen2.5-coder:7b on ollama ${ollama.url}`);
    expect(stdout).toContain('why: configured model qwen2.5-coder:7b');
    expect(stdout).toMatch(/\* qwen2\.5-coder:7b +llm +tools/);
  });

  it('exits 4 with the reason when no model would be chosen', async () => {
    const ollama = await fake({
      flavor: 'ollama',
      models: [{ id: 'nomic-embed-text:latest', type: 'embedding' }],
    });
    const { exitCode, stdout } = await fabric(['models', '--json'], {
      LM_STUDIO_URL: await closedPortUrl(),
      OLLAMA_HOST: ollama.url,
    });
    expect(exitCode).toBe(4);
    const out = JSON.parse(stdout);
    expect(out.chosen).toBeNull();
    expect(out.error.code).toBe('model_not_found');
    expect(out.error.message).toContain(`ollama ${ollama.url}: nomic-embed-text:latest (embedding`);
    expect(ollama.chatRequests()).toHaveLength(0);
  });

  it('exits 4 with backend_unavailable, not model_not_found, when no server answers at all', async () => {
    const { exitCode, stdout } = await fabric(['models', '--json'], {
      LM_STUDIO_URL: await closedPortUrl(),
      OLLAMA_HOST: await closedPortUrl(),
    });
    expect(exitCode).toBe(4);
    const out = JSON.parse(stdout);
    expect(out.chosen).toBeNull();
    expect(out.error.code).toBe('backend_unavailable');
    expect(out.error.message).toContain('No model server answered');
  });

  it('has a --help text', async () => {
    const { exitCode, stdout } = await fabric(['models', '--help'], {});
    expect(exitCode).toBe(0);
    expect(stdout).toMatch(/^Usage: fabric models/);
    expect(stdout).toContain('Exit codes:');
  });
});

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

async function fabric(args: string[], env: Record<string, string>) {
  const cwd = await mkdtemp(join(tmpdir(), 'fabric-health-'));
  dirs.push(cwd);
  await writeFile(
    join(cwd, 'fabric.yaml'),
    stringify({ llm: { probe_timeout_ms: 800 }, specialists: { dev: { builder: 'builtin:rust' } } }),
  );
  return runFabricInProcess(args, { env: { NO_COLOR: '1', ...env }, cwd });
}

describe('fabric health lm', () => {
  it('--json reports each backend: state, latency, model count, usable models', async () => {
    const lm = await fake({
      flavor: 'lm_studio',
      models: [
        { id: 'qwen/qwen3-coder-30b', toolUse: true },
        { id: 'text-embedding-x', type: 'embedding' },
      ],
    });
    const down = await closedPortUrl();
    const ollama = await fake({ flavor: 'ollama', models: [{ id: 'deepseek-r1:7b', toolUse: false }] });
    const { exitCode, stdout } = await fabric(['health', 'lm', '--json'], {
      LM_STUDIO_URL: `${lm.url},${down}`,
      OLLAMA_HOST: ollama.url.replace('http://', ''),
    });
    expect(exitCode).toBe(0);
    const out = JSON.parse(stdout);
    expect(out.usable).toBe(true);
    expect(out.backends).toEqual([
      expect.objectContaining({
        backend: 'lm_studio',
        base_url: lm.url,
        state: 'up',
        usable: true,
        models: 2,
        usable_models: 1,
        error: null,
      }),
      expect.objectContaining({
        backend: 'lm_studio',
        base_url: down,
        state: 'down',
        usable: false,
        models: 0,
      }),
      expect.objectContaining({
        backend: 'ollama',
        base_url: ollama.url,
        state: 'up',
        usable: false,
        models: 1,
        usable_models: 0,
      }),
    ]);
    expect(out.backends.every((b: { latency_ms: unknown }) => typeof b.latency_ms === 'number')).toBe(true);
  });

  it('exits 4 when no backend is usable, and says what to do', async () => {
    const lmAsOllama = await fake({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
    });
    const { exitCode, stdout } = await fabric(['health', 'lm'], {
      LM_STUDIO_URL: await closedPortUrl(),
      // An LM Studio server where Ollama should be answers 200 with an error field: not Ollama.
      OLLAMA_HOST: lmAsOllama.url,
    });
    expect(exitCode).toBe(4);
    expect(stdout).toMatch(/lm_studio http:\/\/127\.0\.0\.1:\d+ +down/);
    expect(stdout).toContain('not an Ollama server');
    expect(stdout).toContain('No backend is usable.');
  });

  it('exits 4 in --json form too', async () => {
    const { exitCode, stdout } = await fabric(['health', 'lm', '--json'], {
      LM_STUDIO_URL: await closedPortUrl(),
      OLLAMA_HOST: await closedPortUrl(),
    });
    expect(exitCode).toBe(4);
    expect(JSON.parse(stdout)).toMatchObject({ usable: false });
  });

  it('needs the `lm` subject, and has a --help text', async () => {
    const missing = await fabric(['health'], {});
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(
      /^fabric health needs to know what to check: `fabric health lm` checks the model backends\.\n/,
    );
    expect(missing.stderr).not.toContain('got what to check');
    const wrong = await fabric(['health', 'db'], {});
    expect(wrong.exitCode).toBe(2);
    expect(wrong.stderr).toMatch(/^fabric health cannot check "db"; the one subject is `lm`/);
    const help = await fabric(['health', '--help'], {});
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toMatch(/^Usage: fabric health lm/);
  });
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadConfig } from '../../src/config/load.ts';
import { FabricError } from '../../src/domain/errors.ts';

/** `llm.backends` (issue 27): llama-server, vLLM and keyed endpoints beside LM Studio and Ollama. */
describe('llm.backends in the config', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-backends-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function load(backends: unknown[], env: Record<string, string> = {}) {
    await writeFile(
      join(dir, 'fabric.yaml'),
      stringify({ llm: { backends }, specialists: { s: { builder: 'builtin:rust' } } }),
    );
    return loadConfig({ cwd: dir, env });
  }

  async function failure(backends: unknown[], env: Record<string, string> = {}): Promise<string> {
    const error = await load(backends, env).catch((e: unknown) => e);
    if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
    expect(error.code).toBe('config_invalid');
    return error.message;
  }

  it('keeps lm_studio_urls and ollama_url, normalises each URL and names each backend by its kind', async () => {
    const config = await load([
      { kind: 'llama_cpp', url: '127.0.0.1:8080/v1/' },
      { kind: 'vllm', url: 'http://gpu-box:8000', name: 'gpu' },
    ]);
    expect(config.llm.lm_studio_urls).toEqual(['http://localhost:1234']);
    expect(config.llm.backends.map((b) => [b.kind, b.name, b.url])).toEqual([
      ['llama_cpp', 'llama_cpp', 'http://127.0.0.1:8080'],
      ['vllm', 'gpu', 'http://gpu-box:8000'],
    ]);
  });

  it('reads the key from the variable named, and never shows it', async () => {
    const key = 'sk-test-SECRET-0123456789';
    const config = await load(
      [
        {
          kind: 'openai',
          url: 'https://api.openai.com/v1',
          api_key_env: 'OPENAI_API_KEY',
          models: ['gpt-5-mini'],
        },
      ],
      { OPENAI_API_KEY: key },
    );
    const backend = config.llm.backends[0];
    expect(backend?.api_key?.reveal()).toBe(key);
    expect(backend?.url).toBe('https://api.openai.com');
    expect(JSON.stringify(config)).not.toContain(key);
    expect(inspect(config, { depth: 10 })).not.toContain(key);
    expect(`${backend?.api_key}`).toBe('[redacted]');
  });

  it('says which variable to export when the key is not set', async () => {
    expect(
      await failure([
        { kind: 'openai', url: 'https://openrouter.ai/api/v1', api_key_env: 'OPENROUTER_API_KEY' },
      ]),
    ).toMatch(
      /llm\.backends\[0\] \(openai\): api_key_env names OPENROUTER_API_KEY, which is not set\. Export it/,
    );
  });

  it('asks for api_key_env for a hosted endpoint, but not for a proxy on this machine', async () => {
    expect(await failure([{ kind: 'openai', url: 'https://api.openai.com' }])).toMatch(
      /needs a key: set api_key_env to the name of the environment variable/,
    );
    const config = await load([{ kind: 'openai', url: 'http://localhost:4000', name: 'litellm' }]);
    expect(config.llm.backends[0]?.api_key).toBeUndefined();
  });

  it('takes LM Studio entries into lm_studio_urls and an Ollama entry as ollama_url; the environment still wins', async () => {
    const listed = [
      { kind: 'lm_studio', url: 'http://a:1234/v1' },
      { kind: 'lm_studio', url: 'b:1234' },
      { kind: 'ollama', url: 'http://c:11434' },
      { kind: 'vllm', url: 'http://d:8000' },
    ];
    const config = await load(listed);
    // Listed LM Studio servers replace the default localhost one the file did not ask for.
    expect(config.llm.lm_studio_urls).toEqual(['http://a:1234', 'http://b:1234']);
    expect(config.llm.ollama_url).toBe('http://c:11434');
    expect(config.llm.backends.map((b) => b.kind)).toEqual(['vllm']);
    const env = await load(listed, { LM_STUDIO_URL: 'http://e:1234', OLLAMA_HOST: 'f' });
    expect([env.llm.lm_studio_urls, env.llm.ollama_url]).toEqual([['http://e:1234'], 'http://f:11434']);
  });

  it('refuses two Ollama servers, and keys or limits on an LM Studio entry', async () => {
    expect(
      await failure([
        { kind: 'ollama', url: 'http://a:11434' },
        { kind: 'ollama', url: 'http://b:11434' },
      ]),
    ).toMatch(/the fabric asks one Ollama server, and several ollama entries name one\. Keep one\./);
    expect(await failure([{ kind: 'lm_studio', url: 'http://a:1234', api_key_env: 'K' }])).toMatch(
      /llm\.backends\[0\] \(lm_studio\): api_key_env is not taken for lm_studio, only url\. Remove it\./,
    );
    expect(await failure([{ kind: 'lm_studio', url: 'http://a:1234', parallel: 2 }])).toMatch(
      /llm\.backends\[0\] \(lm_studio\): parallel is not taken for lm_studio, which says its slots itself \(config\.parallel\)\. Remove it\./,
    );
  });

  it("takes an Ollama entry's parallel as llm.ollama_parallel (Ollama does not report OLLAMA_NUM_PARALLEL)", async () => {
    const config = await load([{ kind: 'ollama', url: 'http://c:11434', parallel: 2 }]);
    expect(config.llm.ollama_parallel).toBe(2);
  });

  it('refuses an unknown kind, a key in the file, a twice-used name', async () => {
    expect(await failure([{ kind: 'tgi', url: 'http://a' }])).toMatch(
      /llm\.backends\[0\]\.kind: expected \("lm_studio" \| "ollama" \| "llama_cpp" \| "vllm" \| "openai"\)/,
    );
    expect(await failure([{ kind: 'openai', url: 'http://localhost:4000', api_key: 'sk-x' }])).toMatch(
      /llm\.backends\[0\]\.api_key: unknown key/,
    );
    expect(
      await failure([
        { kind: 'llama_cpp', url: 'http://a:8080' },
        { kind: 'llama_cpp', url: 'http://b:8080' },
      ]),
    ).toMatch(
      /llm\.backends\[1\]: the name "llama_cpp" is taken by llm\.backends\[0\]\. Give each backend its own `name:`/,
    );
  });
});

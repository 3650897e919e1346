import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_PATH, loadConfig } from '../../src/config/load.ts';
import { FabricError } from '../../src/domain/errors.ts';

describe('loadConfig', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function failure(text: string, name = 'fabric.yaml'): Promise<FabricError> {
    await writeFile(join(dir, name), text);
    const error = await loadConfig({ cwd: dir, env: {} }).catch((e: unknown) => e);
    if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
    return error;
  }

  it('falls back to the shipped default, which defines rust and research', async () => {
    const config = await loadConfig({ cwd: dir, env: {} });
    expect(config.source).toBe(DEFAULT_CONFIG_PATH);
    expect(Object.keys(config.specialists)).toEqual(expect.arrayContaining(['rust', 'research']));
    expect(config.loop.max_steps).toBe(30);
    expect(config.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('prefers --config over FABRIC_CONFIG over ./fabric.yaml', async () => {
    const body = (n: number) => `specialists: { s${n}: { builder: "builtin:rust" } }\n`;
    await writeFile(join(dir, 'fabric.yaml'), body(1));
    await writeFile(join(dir, 'env.yaml'), body(2));
    await writeFile(
      join(dir, 'flag.json'),
      JSON.stringify({ specialists: { s3: { builder: 'builtin:rust' } } }),
    );
    expect(Object.keys((await loadConfig({ cwd: dir, env: {} })).specialists)).toEqual(['s1']);
    expect(
      Object.keys((await loadConfig({ cwd: dir, env: { FABRIC_CONFIG: 'env.yaml' } })).specialists),
    ).toEqual(['s2']);
    const flagged = await loadConfig({
      configPath: 'flag.json',
      cwd: dir,
      env: { FABRIC_CONFIG: 'env.yaml' },
    });
    expect(Object.keys(flagged.specialists)).toEqual(['s3']);
  });

  it('resolves every path in a config file against the file, runs_dir included', async () => {
    const elsewhere = await mkdtemp(join(tmpdir(), 'fabric-cwd-'));
    await writeFile(
      join(dir, 'fabric.yaml'),
      'runs_dir: ./out\nspecialists:\n  units: { builder: ./pack.ts#buildPack, workspace: ./ws }\n',
    );
    const config = await loadConfig({ cwd: elsewhere, configPath: join(dir, 'fabric.yaml'), env: {} });
    expect(config.runs_dir).toBe(join(dir, 'out'));
    expect(config.specialists.units?.workspace).toBe(join(dir, 'ws'));
    await rm(elsewhere, { recursive: true, force: true });
  });

  it("defaults the runs directory and the rust specialist's workspace to the working directory", async () => {
    const config = await loadConfig({ cwd: dir, env: {} });
    expect(config.source).toBe(DEFAULT_CONFIG_PATH);
    expect(config.runs_dir).toBe(join(dir, 'runs'));
    expect(config.specialists.rust?.workspace).toBe(dir);
    expect(config.specialists.research?.workspace).toBeUndefined();
  });

  it('lets the environment override the file', async () => {
    await writeFile(join(dir, 'fabric.yaml'), 'llm: { lm_studio_urls: ["http://a:1"] }\nspecialists: {}\n');
    const config = await loadConfig({
      cwd: dir,
      env: {
        LM_STUDIO_URL: 'http://h1:1234/v1/, h2:5678',
        OLLAMA_HOST: '0.0.0.0',
        FABRIC_RUNS_DIR: 'out',
        FABRIC_DSN: 'postgres://x',
      },
    });
    expect(config.llm.lm_studio_urls).toEqual(['http://h1:1234', 'http://h2:5678']);
    expect(config.llm.ollama_url).toBe('http://127.0.0.1:11434');
    expect(config.runs_dir).toBe(join(dir, 'out'));
    expect(config.control.dsn).toBe('postgres://x');
  });

  it('puts the fabric cache where FABRIC_CACHE_DIR, XDG_CACHE_HOME or HOME says, and nowhere for off', async () => {
    const cacheOf = async (env: Record<string, string>) => (await loadConfig({ cwd: dir, env })).cacheDir;
    expect(await cacheOf({ HOME: '/home/u' })).toBe('/home/u/.cache/agent-fabric');
    expect(await cacheOf({ HOME: '/home/u', XDG_CACHE_HOME: '/x/cache' })).toBe('/x/cache/agent-fabric');
    // A relative XDG_CACHE_HOME is invalid by its spec, and ignored.
    expect(await cacheOf({ HOME: '/home/u', XDG_CACHE_HOME: 'rel' })).toBe('/home/u/.cache/agent-fabric');
    expect(await cacheOf({ HOME: '/home/u', FABRIC_CACHE_DIR: 'c' })).toBe(join(dir, 'c'));
    expect(await cacheOf({ HOME: '/home/u', FABRIC_CACHE_DIR: 'off' })).toBeNull();
    expect(await cacheOf({})).toBeNull();
  });

  it('names the path, what was expected and what was found for a bad value', async () => {
    const error = await failure('specialists:\n  rust:\n    builder: builtin:rust\n    max_steps: "many"\n');
    expect(error.code).toBe('config_invalid');
    expect(error.message).toContain('specialists.rust.max_steps: expected number, found "many"');
  });

  it('reports a missing required key and an unknown key', async () => {
    const error = await failure('specialists:\n  rust:\n    modle: x\n');
    expect(error.message).toContain('specialists.rust.builder: missing');
    expect(error.message).toContain('specialists.rust.modle: unknown key');
  });

  it('suggests the key that was meant for a mistyped one, at any depth, with the file and path', async () => {
    const error = await failure(
      'lm: {}\nloop:\n  maxSteps: 3\nspecialists:\n  rust:\n    builder: builtin:rust\n    max_step: 5\n',
    );
    expect(error.code).toBe('config_invalid');
    expect(error.message).toContain(`${join(dir, 'fabric.yaml')}: invalid configuration:`);
    expect(error.message).toContain('  - lm: unknown key. Did you mean "llm"?');
    expect(error.message).toContain('  - loop.maxSteps: unknown key. Did you mean "max_steps"?');
    expect(error.message).toContain('  - specialists.rust.max_step: unknown key. Did you mean "max_steps"?');
  });

  it('lists the keys a mapping takes when no key is close to an unknown one', async () => {
    const error = await failure(
      'specialists:\n  rust:\n    builder: builtin:rust\n    sandbox:\n      zzzzzz: 1\n',
    );
    expect(error.message).toContain(
      'specialists.rust.sandbox.zzzzzz: unknown key (remove it, or check its spelling; the keys here are allowed_commands, timeout_s,',
    );
  });

  it('reports YAML syntax errors with the file name', async () => {
    const error = await failure('specialists:\n  rust: [unclosed\n');
    expect(error.code).toBe('config_invalid');
    expect(error.message).toMatch(/fabric\.yaml: not valid YAML/);
  });

  it('reports invalid JSON and an empty file', async () => {
    expect((await failure('{"specialists": ', 'fabric.json')).message).toMatch(/not valid JSON/);
    await rm(join(dir, 'fabric.json'));
    expect((await failure('')).message).toMatch(/expected a mapping at the top level/);
  });

  it('says which flag named a config file that does not exist', async () => {
    const error = await loadConfig({ configPath: 'nope.yaml', cwd: dir, env: {} }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).message).toMatch(/nope\.yaml \(from --config\)/);
  });
});

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { stringify } from 'yaml';
import { runCli } from '../../src/interfaces/cli/cli.ts';

export const ROOT = resolve(import.meta.dirname, '../..');
export const EXAMPLE_PACK = join(ROOT, 'packs/example/pack.ts');
export const DENO = join(ROOT, 'node_modules/.bin/deno');
/** The CLI from the sources on Node (through tsx); `bin/fabric.mjs` runs the build. */
export const SOURCE_CLI = join(ROOT, 'test/support/fabric-source.mjs');

/** A temp directory with a config file and a runs directory; `cleanup` removes it. */
export interface Sandbox {
  readonly dir: string;
  readonly configPath: string;
  readonly runsDir: string;
  cleanup(): Promise<void>;
}

/** A config with the example `units` specialist and fast retries, merged with `extra`. */
export async function makeSandbox(extra: Record<string, unknown> = {}): Promise<Sandbox> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-test-'));
  const config = {
    version: 1,
    llm: { retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 }, probe_timeout_ms: 1000 },
    specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' } },
    // The control plane has its own tests; elsewhere it would only add an embedded database per run.
    control: { enabled: false },
    ...extra,
  };
  const configPath = join(dir, 'fabric.yaml');
  await writeFile(configPath, stringify(config));
  return {
    dir,
    configPath,
    runsDir: join(dir, 'runs'),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * The suite's fabric cache, shared by its tests as a user's is by their runs directories: one
 * initdb of the embedded database for the whole suite, not one for each new runs directory.
 */
export const TEST_CACHE_DIR = join(tmpdir(), 'fabric-test-cache');

/** The environment a test run sees: the fake server as LM Studio, Ollama on a closed port. */
export function testEnv(sandbox: Sandbox, lmStudioUrl: string, extra: Record<string, string> = {}) {
  return {
    LM_STUDIO_URL: lmStudioUrl,
    OLLAMA_HOST: '127.0.0.1:9',
    FABRIC_RUNS_DIR: sandbox.runsDir,
    FABRIC_CACHE_DIR: TEST_CACHE_DIR,
    NO_COLOR: '1',
    ...extra,
  };
}

/**
 * Spawns the real CLI from the sources (`fabric-source.mjs` on Node, `deno run -A
 * src/interfaces/cli/main.ts`), or with `build: true` the compiled one (`bin/fabric.mjs`, which
 * runs dist/).
 */
export function spawnFabric(
  args: readonly string[],
  options: { env: Record<string, string>; cwd: string; runtime?: 'node' | 'deno'; build?: boolean },
) {
  const base = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' };
  const execOptions = {
    reject: false as const,
    env: { ...base, ...options.env },
    extendEnv: false as const,
    cwd: options.cwd,
    stdin: 'ignore' as const,
  };
  if (options.runtime === 'deno') {
    return execa(
      DENO,
      options.build
        ? // The package's deno.json maps `agent-fabric` for custom packs outside it (docs/packs.md).
          ['run', '-A', '--quiet', '--config', join(ROOT, 'deno.json'), join(ROOT, 'bin/fabric.mjs'), ...args]
        : ['run', '-A', '--quiet', join(ROOT, 'src/interfaces/cli/main.ts'), ...args],
      execOptions,
    );
  }
  const entry = options.build ? join(ROOT, 'bin/fabric.mjs') : SOURCE_CLI;
  return execa(process.execPath, [entry, ...args], execOptions);
}

/** Runs the CLI in-process, collecting its output. */
export async function runFabricInProcess(
  args: readonly string[],
  options: { env: Record<string, string>; cwd: string; signal?: AbortSignal },
): Promise<{ exitCode: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const exitCode = await runCli(args, {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: options.env,
    cwd: options.cwd,
    signal: options.signal ?? new AbortController().signal,
  });
  return { exitCode, stdout, stderr };
}

import { readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as v from 'valibot';
import { parse as parseYaml } from 'yaml';
import { FabricError } from '../domain/errors.ts';
import { didYouMean } from '../domain/words.ts';
import type { Environment } from './env.ts';
import { expectedAt, knownKeysAt } from './known-keys.ts';
import { FabricConfigSchema, type LlmConfig, type ParsedConfig, type SpecialistConfig } from './schema.ts';
import { resolveLlm } from './backends.ts';
import { applyTelemetryEnvironment } from './telemetry.ts';

/** The shipped default config, used when no other is found. */
export const DEFAULT_CONFIG_PATH = fileURLToPath(new URL('../../config/fabric.yaml', import.meta.url));

/** The fabric's configuration, parsed, with the environment applied and relative paths resolved. */
export interface FabricConfig extends Omit<ParsedConfig, 'llm'> {
  /** `llm.backends` carry their keys, read from the environment (never shown: see secret.ts). */
  readonly llm: LlmConfig;
  /** The file it came from. */
  readonly source: string;
  /** Directory that relative paths in the file are resolved against. */
  readonly baseDir: string;
  /**
   * Whether the user chose `runs_dir` (in the config file, or `FABRIC_RUNS_DIR`); false for the
   * default `./runs` in the working directory, which `fabric serve` may move out of a git work
   * tree (docs/adr/0021-serve-runs-dir.md).
   */
  readonly runsDirSet: boolean;
  /**
   * The fabric's cache, shared by every runs directory on the machine: `FABRIC_CACHE_DIR`, else
   * `$XDG_CACHE_HOME/agent-fabric`, else `~/.cache/agent-fabric`; null when `FABRIC_CACHE_DIR` is
   * `off` or no home is known. Holds only what can be made again (a new embedded database's
   * initdb output).
   */
  readonly cacheDir: string | null;
  /**
   * sha256 of the effective configuration's parts that shape a run (the models, the loop, the
   * specialists, the profiles, search), logged in `run_start`; where a process keeps its runs and
   * reaches its databases, its API, queue, worker, telemetry and log settings are left out, so a
   * run resumed by another process with the same config (a queue worker, SPEC §18) matches it.
   */
  readonly digest: string;
}

export interface LoadOptions {
  /** `--config FILE`; wins over everything. */
  readonly configPath?: string | undefined;
  readonly cwd: string;
  readonly env: Environment;
}

const CANDIDATES = ['fabric.yaml', 'fabric.yml', 'fabric.json'];

/**
 * Finds and loads the config: `--config`, then `FABRIC_CONFIG`, then `./fabric.yaml` (or `.yml`,
 * `.json`) in the working directory, then the shipped default. The environment overrides the file.
 */
export async function loadConfig(options: LoadOptions): Promise<FabricConfig> {
  const path = await locateConfig(options);
  const raw = await readConfigFile(path);
  return buildConfig(raw, path, options.env, options.cwd);
}

async function locateConfig({ configPath, cwd, env }: LoadOptions): Promise<string> {
  const explicit = configPath ?? env.FABRIC_CONFIG;
  if (explicit !== undefined && explicit !== '') {
    const path = resolve(cwd, explicit);
    if (!(await isFile(path))) {
      const from = configPath !== undefined ? '--config' : 'FABRIC_CONFIG';
      if (await isDirectory(path)) {
        throw new FabricError(
          'config_not_found',
          `${path} (from ${from}) is a directory, not a config file. Name the file, e.g. ${resolve(path, 'fabric.yaml')}.`,
        );
      }
      throw new FabricError(
        'config_not_found',
        `Config file not found: ${path} (from ${from}). Check the path.`,
      );
    }
    return path;
  }
  for (const name of CANDIDATES) {
    const path = resolve(cwd, name);
    if (await isFile(path)) return path;
  }
  return DEFAULT_CONFIG_PATH;
}

async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined))?.isDirectory() ?? false;
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

async function readConfigFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new FabricError('config_not_found', `Cannot read config file ${path}: ${String(error)}`, {
      cause: error,
    });
  }
  try {
    if (path.endsWith('.json')) return JSON.parse(text);
    return parseYaml(text, { prettyErrors: true });
  } catch (error) {
    const what = path.endsWith('.json') ? 'JSON' : 'YAML';
    throw new FabricError(
      'config_invalid',
      `${path}: not valid ${what}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

/** Validates a raw config object; applies the environment; resolves paths. Exported for tests. */
export async function buildConfig(
  raw: unknown,
  source: string,
  env: Environment,
  cwd: string,
): Promise<FabricConfig> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new FabricError(
      'config_invalid',
      `${source}: expected a mapping at the top level (with a "specialists" key), found ${describe(raw)}.`,
    );
  }
  const result = v.safeParse(FabricConfigSchema, raw);
  if (!result.success) {
    const lines = result.issues.slice(0, 8).map((issue) => `  - ${formatIssue(issue)}`);
    const more = result.issues.length > 8 ? `\n  (${result.issues.length - 8} more)` : '';
    throw new FabricError('config_invalid', `${source}: invalid configuration:\n${lines.join('\n')}${more}`, {
      details: { issues: result.issues.map((issue) => formatIssue(issue)) },
    });
  }
  const parsed = applyEnvironment(result.output, env, source, raw as { llm?: unknown });
  checkQueue(parsed, source);
  const baseDir = dirname(source);
  // SPEC §14: every path in the file is relative to the file. A runs directory the file does not
  // name is `./runs` in the working directory (the shipped default config lies inside the
  // installed package), and FABRIC_RUNS_DIR, like a flag, is relative to the working directory.
  const envDir = env.FABRIC_RUNS_DIR ?? '';
  const fromEnv = envDir !== '';
  const inFile = (raw as { runs_dir?: unknown }).runs_dir !== undefined;
  const runsDir = fromEnv
    ? resolve(cwd, envDir)
    : inFile
      ? resolvePath(baseDir, parsed.runs_dir)
      : resolve(cwd, parsed.runs_dir);
  await checkRunsDir(runsDir, source, fromEnv);
  const specialists = Object.fromEntries(
    Object.entries(parsed.specialists).map(([name, spec]) => [
      name,
      {
        ...spec,
        ...workspaceOf(spec, baseDir, cwd),
      },
    ]),
  );
  const effective = { ...parsed, runs_dir: runsDir, specialists };
  const { runs_dir, control, api, daemon, queue, worker, telemetry, log_format, ...shaping } = effective;
  return {
    ...effective,
    source,
    baseDir,
    runsDirSet: fromEnv || inFile,
    cacheDir: cacheDirOf(env, cwd),
    digest: await digestOf(shaping),
  };
}

function cacheDirOf(env: Environment, cwd: string): string | null {
  const chosen = env.FABRIC_CACHE_DIR?.trim() ?? '';
  if (chosen === 'off') return null;
  if (chosen !== '') return resolve(cwd, chosen);
  const xdg = env.XDG_CACHE_HOME?.trim() ?? '';
  if (isAbsolute(xdg)) return resolve(xdg, 'agent-fabric');
  const home = env.HOME?.trim() || env.USERPROFILE?.trim() || '';
  return isAbsolute(home) ? resolve(home, '.cache', 'agent-fabric') : null;
}

/**
 * The runs directory may not exist yet (the first run makes it), but it must not be a file: a
 * config whose runs_dir names itself would otherwise fail at the first run, half-started.
 */
async function checkRunsDir(runsDir: string, source: string, fromEnv: boolean): Promise<void> {
  const info = await stat(runsDir).catch(() => undefined);
  if (info === undefined || info.isDirectory()) return;
  const what = runsDir === source ? 'the config file itself' : 'a file';
  throw new FabricError(
    'config_invalid',
    `${fromEnv ? 'FABRIC_RUNS_DIR' : `${source}: runs_dir`} names ${runsDir}, which is ${what}, not a directory. ` +
      'Point it at a directory (it is created if missing), e.g. ./runs.',
  );
}

function applyEnvironment(
  config: ParsedConfig,
  env: Environment,
  source: string,
  raw: { llm?: unknown },
): Omit<ParsedConfig, 'llm'> & { readonly llm: LlmConfig } {
  const llm = resolveLlm(config.llm, env, source, raw);
  const control = { ...config.control };
  if (env.FABRIC_DSN) control.dsn = env.FABRIC_DSN;
  const search = { ...config.search };
  if (env.SEARXNG_URL) search.searxng_url = env.SEARXNG_URL;
  const api = { ...config.api };
  if (env.FABRIC_API_TOKEN) api.token = env.FABRIC_API_TOKEN;
  const daemon = { ...config.daemon };
  if (env.LM_STUDIO_MODEL) daemon.model = env.LM_STUDIO_MODEL;
  if (env.OPEN_SPEC_DAEMON_INTERVAL) daemon.interval_s = parseInterval(env.OPEN_SPEC_DAEMON_INTERVAL);
  const queue = env.FABRIC_QUEUE ? parseQueue(env.FABRIC_QUEUE) : config.queue;
  const telemetry = applyTelemetryEnvironment(config.telemetry, env);
  return { ...config, llm, control, search, api, daemon, queue, telemetry };
}

function parseQueue(value: string): ParsedConfig['queue'] {
  if (value === 'in_process' || value === 'postgres') return value;
  throw new FabricError('config_invalid', `FABRIC_QUEUE: expected in_process or postgres, found "${value}".`);
}

/** The queue lives in the control plane's Postgres: it needs a DSN and the plane on. */
function checkQueue(config: Pick<ParsedConfig, 'queue' | 'control' | 'worker'>, source: string): void {
  if (config.queue !== 'postgres') return;
  if (config.control.dsn === undefined || config.control.dsn.trim() === '')
    throw new FabricError(
      'config_invalid',
      `${source}: queue: postgres needs a Postgres server: set FABRIC_DSN (or control.dsn), e.g. postgres://user@host:5432/fabric. ` +
        'Without one, leave queue out: runs execute in-process.',
    );
  if (!config.control.enabled)
    throw new FabricError(
      'config_invalid',
      `${source}: queue: postgres needs the control plane (control.enabled: true): workers report runs through it.`,
    );
  const { heartbeat_s, dead_after_s } = config.worker;
  // Each heartbeat renews the leases of a worker's runs: a lease must outlast a late beat or two.
  if (dead_after_s < 2 * heartbeat_s)
    throw new FabricError(
      'config_invalid',
      `${source}: worker.dead_after_s (${dead_after_s}) must be at least twice worker.heartbeat_s (${heartbeat_s}): ` +
        `a run's lease is renewed by each heartbeat and lasts dead_after_s. Raise dead_after_s to ${2 * heartbeat_s} or more (the default is 6 heartbeats: 5 and 30).`,
    );
}

function parseInterval(value: string): number {
  const seconds = Number(value);
  if (!Number.isInteger(seconds) || seconds < 1) {
    throw new FabricError(
      'config_invalid',
      `OPEN_SPEC_DAEMON_INTERVAL: expected a whole number of seconds (at least 1), found "${value}".`,
    );
  }
  return seconds;
}

/**
 * SPEC §14: the rust specialist with no workspace works on the code base the user is in. Other
 * packs keep none unless configured: a workspace is copied whole by `replay --execute`, and the
 * working directory may be a home directory.
 */
function workspaceOf(spec: SpecialistConfig, baseDir: string, cwd: string): { workspace?: string } {
  if (spec.workspace !== undefined) return { workspace: resolvePath(baseDir, spec.workspace) };
  return spec.builder === 'builtin:rust' ? { workspace: resolve(cwd) } : {};
}

function resolvePath(baseDir: string, path: string): string {
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

function formatIssue(issue: v.BaseIssue<unknown>): string {
  const path = issuePath(issue) ?? '(top level)';
  const keys = (issue.path ?? []).map((item) => item.key as PropertyKey);
  if (issue.kind === 'schema' && issue.expected === 'never') {
    const known = knownKeysAt(FabricConfigSchema, keys.slice(0, -1));
    const hint = didYouMean(String(keys.at(-1) ?? ''), known);
    if (hint !== '') return `${path}: unknown key.${hint}`;
    const list = known.length > 0 ? `; the keys here are ${known.join(', ')}` : '';
    return `${path}: unknown key (remove it, or check its spelling${list})`;
  }
  if (issue.received === 'undefined') {
    // valibot's `expected` for a missing key is the key's own name: say what it takes instead.
    return `${path}: missing; expected ${expectedAt(FabricConfigSchema, keys) ?? 'a value'}`;
  }
  // A rule of our own (`v.check`) says what is wrong in its message.
  if (issue.type === 'check') return `${path}: ${issue.message}`;
  if (issue.type === 'min_length' && typeof issue.input === 'string' && issue.input === '')
    return `${path}: expected a non-empty string, found ""`;
  return `${path}: expected ${issue.expected ?? issue.message}, found ${issue.received}`;
}

/** Where the issue is, as the product writes it elsewhere: `specialists.rust.policy.rules[0].command`. */
function issuePath(issue: v.BaseIssue<unknown>): string | undefined {
  if (issue.path === undefined || issue.path.length === 0) return undefined;
  return issue.path
    .map((item, index) =>
      item.type === 'array' ? `[${String(item.key)}]` : `${index === 0 ? '' : '.'}${String(item.key)}`,
    )
    .join('');
}

function describe(value: unknown): string {
  if (value === null) return 'null (an empty file?)';
  if (Array.isArray(value)) return 'a list';
  return typeof value;
}

async function digestOf(value: unknown): Promise<string> {
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  const hash = await crypto.subtle.digest('SHA-256', bytes);
  return `sha256:${Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

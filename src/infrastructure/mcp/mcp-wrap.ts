import type { FabricSettings, SpecialistPack } from '../../application/ports.ts';
import type { Environment } from '../../config/env.ts';
import type { SpecialistConfig } from '../../config/schema.ts';
import { attachMcpServers } from './mcp-pack.ts';
import { sandboxedLaunch } from './sandboxed-launch.ts';

/** What the composition root knows that MCP sessions need. */
export interface McpWrapOptions {
  /** The fabric's environment: only PATH and HOME are passed on to stdio servers. */
  readonly hostEnv: Environment;
  /** The config file's directory: relative `cwd` entries and the default cwd. */
  readonly baseDir: string;
  readonly clientVersion: string;
  readonly connectTimeoutMs?: number;
}

/** The registry's `wrap` hook: attaches a specialist's `mcp_servers`, or returns the pack as it is. */
export type PackWrap = (
  pack: SpecialistPack,
  name: string,
  config: SpecialistConfig,
  context?: { readonly workspace: string | undefined; readonly settings?: FabricSettings },
) => SpecialistPack;

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;
const DEFAULT_CALL_TIMEOUT_S = 300;

/**
 * Builds the registry's `wrap` hook. Stdio servers start from a minimal environment (PATH and
 * HOME, plus the entry's `env`), never the fabric's whole environment with its secrets, and run
 * in the workspace unless their entry names a `cwd`. Tool calls are bounded by the specialist's
 * `sandbox.timeout_s` (default 300 s), extended while the server reports progress. With
 * `sandbox.mcp: true` stdio servers run inside the OS sandbox (see sandboxed-launch.ts).
 */
export function createMcpWrap(options: McpWrapOptions): PackWrap {
  const baseEnv: Record<string, string> = {};
  for (const key of ['PATH', 'HOME'] as const) {
    const value = options.hostEnv[key];
    if (value !== undefined && value !== '') baseEnv[key] = value;
  }
  return (pack, _name, config, context) => {
    if (Object.keys(config.mcp_servers).length === 0) return pack;
    const sandbox = config.sandbox;
    return attachMcpServers(pack, config.mcp_servers, {
      baseEnv,
      baseDir: options.baseDir,
      defaultCwd: context?.workspace ?? config.workspace ?? options.baseDir,
      clientVersion: options.clientVersion,
      callTimeoutMs: (config.sandbox?.timeout_s ?? DEFAULT_CALL_TIMEOUT_S) * 1000,
      connectTimeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      wrapLaunch: sandbox?.mcp
        ? (launch) => sandboxedLaunch(launch, sandbox, options.baseDir, undefined, context?.settings)
        : undefined,
    });
  };
}

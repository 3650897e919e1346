import { readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { McpSessionSettings } from '../../../src/infrastructure/mcp/mcp-session.ts';
import { ROOT } from '../../support/fabric-cli.ts';

/** The real reference servers, run offline from node_modules. */
export const FS_SERVER = join(ROOT, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
export const EVERYTHING_SERVER = join(
  ROOT,
  'node_modules/@modelcontextprotocol/server-everything/dist/index.js',
);

/** Session settings for tests: the test process's PATH and HOME, short timeouts. */
export function testSettings(cwd: string, overrides: Partial<McpSessionSettings> = {}): McpSessionSettings {
  return {
    baseEnv: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' },
    defaultCwd: cwd,
    baseDir: cwd,
    clientVersion: 'test',
    callTimeoutMs: 20_000,
    connectTimeoutMs: 20_000,
    ...overrides,
  };
}

/** True while a process exists and is not a zombie. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && !/^\d+ \(.*\) Z/.test(stat);
}

/** Pids of live processes whose working directory is `dir` or whose command line mentions `marker`. */
export async function processesMarked(dir: string, marker = dir): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cwd = await readlink(`/proc/${entry}/cwd`).catch(() => '');
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if ((cwd === dir || cmdline.includes(marker)) && (await isAlive(Number(entry)))) pids.push(Number(entry));
  }
  return pids;
}

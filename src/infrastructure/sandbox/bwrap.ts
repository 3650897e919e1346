import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Toolchain } from './toolchain.ts';
import { loadExeca } from '../lazy-import.ts';

/** Where bubblewrap is looked for; a fixed list, never the fabric's PATH. */
const BWRAP_CANDIDATES = ['/usr/bin/bwrap', '/usr/local/bin/bwrap', '/bin/bwrap'];

/** A bubblewrap that was found and shown to work on this machine. */
export interface Bwrap {
  readonly path: string;
  /** `--disable-userns` (bubblewrap >= 0.8): no nested user namespaces inside the sandbox. */
  readonly canDisableUserns: boolean;
  /** `--size` (newer bubblewrap): the private /tmp is bounded so a command cannot fill memory. */
  readonly canSizeTmpfs: boolean;
}

/** The outcome of looking for bubblewrap: usable, or the reason it is not. */
export type BwrapProbe =
  | { readonly ok: true; readonly bwrap: Bwrap }
  | { readonly ok: false; readonly reason: string };

const probes = new Map<string, Promise<BwrapProbe>>();

/**
 * Finds bubblewrap and checks that it can create the namespaces the sandbox needs (a kernel or
 * container may forbid user namespaces). Cached per path for the life of the process.
 */
export function probeBwrap(explicitPath?: string): Promise<BwrapProbe> {
  const key = explicitPath ?? '';
  let probe = probes.get(key);
  if (probe === undefined) {
    probe = runProbe(explicitPath);
    probes.set(key, probe);
  }
  return probe;
}

async function runProbe(explicitPath: string | undefined): Promise<BwrapProbe> {
  const candidates = explicitPath === undefined ? BWRAP_CANDIDATES : [explicitPath];
  let found: string | undefined;
  for (const candidate of candidates) {
    if ((await stat(candidate).catch(() => undefined))?.isFile()) {
      found = candidate;
      break;
    }
  }
  if (found === undefined)
    return { ok: false, reason: `bubblewrap (bwrap) is not installed (looked in ${candidates.join(', ')})` };
  const { execa } = await loadExeca();
  const help = await execa(found, ['--help'], {
    reject: false,
    env: {},
    extendEnv: false,
    stdin: 'ignore',
    timeout: 10_000,
  });
  const canDisableUserns = String(help.stdout).includes('--disable-userns');
  const canSizeTmpfs = String(help.stdout).includes('--size');
  const trial = await execa(
    found,
    [
      '--unshare-all',
      '--unshare-user',
      '--die-with-parent',
      '--ro-bind',
      '/',
      '/',
      '--proc',
      '/proc',
      'true',
    ],
    { reject: false, env: {}, extendEnv: false, stdin: 'ignore', timeout: 10_000 },
  );
  if (trial.exitCode !== 0) {
    return {
      ok: false,
      reason: `${found} cannot create a sandbox here (${String(trial.stderr).trim() || `exit ${trial.exitCode}`}); user namespaces may be disabled (kernel.unprivileged_userns_clone, AppArmor, or a container without CAP_SYS_ADMIN)`,
    };
  }
  return { ok: true, bwrap: { path: found, canDisableUserns, canSizeTmpfs } };
}

/** Inside the sandbox: where the private home and cargo home live (on the private /tmp). */
export const SANDBOX_HOME = '/tmp/.fabric-home';
export const SANDBOX_CARGO_HOME = '/tmp/.fabric-cargo-home';

/** What one sandboxed command may see. */
export interface BwrapLayout {
  readonly root: string;
  readonly toolchain: Toolchain;
  readonly network: boolean;
  /** Existing files and directories of the workspace mounted read-only over the writable bind. */
  readonly readOnlyInWorkspace: readonly string[];
  /** Directories outside the workspace the command may read (an MCP server's installation). */
  readonly readOnlyPaths?: readonly string[];
}

/** System files a compiler, linker and resolver read; none of them holds a secret. */
const ETC_FILES = [
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
  '/etc/os-release',
];
const ETC_NETWORK_FILES = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
  '/etc/host.conf',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/services',
  '/etc/protocols',
];

/**
 * The bubblewrap arguments for one command: a new user (no capabilities), PID, IPC, UTS, cgroup
 * and network namespace; `/usr` and the toolchain read-only; the workspace read-write with its
 * toolchain and git config files read-only; a private `/tmp` holding HOME and CARGO_HOME; no
 * real home, no `/etc` secrets. `--die-with-parent` and the PID namespace mean that killing
 * bwrap kills every process the command started, `setsid` escapees included.
 */
export async function bwrapArgs(
  bwrap: Bwrap,
  layout: BwrapLayout,
  argv: readonly string[],
): Promise<string[]> {
  const args = [
    '--unshare-all',
    // Root on the host keeps every capability unless it is mapped into a user namespace.
    '--unshare-user',
    ...(bwrap.canDisableUserns ? ['--disable-userns'] : []),
    '--uid',
    '1000',
    '--gid',
    '1000',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    // A new session: the command cannot inject keystrokes into the fabric's terminal (TIOCSTI).
    '--new-session',
    ...(layout.network ? ['--share-net'] : []),
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    const info = await lstat(top).catch(() => undefined);
    if (info?.isSymbolicLink()) args.push('--symlink', await readlink(top), top);
    else if (info?.isDirectory()) args.push('--ro-bind', top, top);
  }
  for (const file of layout.network ? [...ETC_FILES, ...ETC_NETWORK_FILES] : ETC_FILES) {
    const real = await realpath(file).catch(() => undefined);
    if (real !== undefined) args.push('--ro-bind', real, file);
  }
  args.push('--proc', '/proc', '--dev', '/dev');
  if (bwrap.canSizeTmpfs) args.push('--size', String(1024 * 1024 * 1024));
  args.push('--tmpfs', '/tmp');
  args.push('--dir', SANDBOX_HOME, '--dir', SANDBOX_CARGO_HOME);
  const { binDir, cargoHome, rustupHome } = layout.toolchain;
  if (binDir !== undefined && !binDir.startsWith('/usr/')) args.push('--ro-bind', binDir, binDir);
  if (rustupHome !== undefined) args.push('--ro-bind', rustupHome, rustupHome);
  if (cargoHome !== undefined) {
    // The download caches only: offline builds of crates already fetched keep working, while
    // credentials.toml and config.toml in the real cargo home stay out of sight.
    for (const cache of ['registry', 'git']) {
      const dir = path.join(cargoHome, cache);
      if ((await stat(dir).catch(() => undefined))?.isDirectory()) {
        args.push('--ro-bind', dir, path.join(SANDBOX_CARGO_HOME, cache));
      }
    }
  }
  for (const entry of layout.readOnlyPaths ?? []) args.push('--ro-bind', entry, entry);
  args.push('--bind', layout.root, layout.root);
  for (const entry of layout.readOnlyInWorkspace) args.push('--ro-bind', entry, entry);
  args.push('--chdir', layout.root, '--', ...argv);
  return args;
}

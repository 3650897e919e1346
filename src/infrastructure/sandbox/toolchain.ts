import { constants } from 'node:fs';
import { access, realpath, stat } from 'node:fs/promises';
import { userInfo } from 'node:os';
import path from 'node:path';

/** Where the Rust toolchain lives, found without reading the fabric's environment. */
export interface Toolchain {
  /** The directory holding `cargo` (a rustup proxy or the real binary). */
  readonly binDir: string | undefined;
  /** The real cargo home: its registry cache is mounted read-only, never its credentials. */
  readonly cargoHome: string | undefined;
  /** rustup's home (toolchains, settings), mounted read-only. */
  readonly rustupHome: string | undefined;
}

/** Explicit locations from the specialist's `options` (`cargo_home`, `rustup_home`). */
export interface ToolchainHints {
  readonly cargoHome?: string | undefined;
  readonly rustupHome?: string | undefined;
}

const SYSTEM_BIN_DIRS = ['/usr/local/bin', '/usr/bin', '/bin'];

/**
 * Finds cargo on a fixed list of places (the user's `~/.cargo/bin` from the password database,
 * the Docker images' `/usr/local/cargo/bin`, the system directories) and derives the homes from
 * where it is, so no variable of the fabric's environment is ever consulted.
 */
export async function discoverToolchain(hints: ToolchainHints = {}): Promise<Toolchain> {
  const home = safeHomeDir();
  const candidates = [
    ...(hints.cargoHome === undefined ? [] : [path.join(hints.cargoHome, 'bin')]),
    ...(home === undefined ? [] : [path.join(home, '.cargo', 'bin')]),
    '/usr/local/cargo/bin',
    ...SYSTEM_BIN_DIRS,
  ];
  let binDir: string | undefined;
  for (const dir of candidates) {
    if (await isExecutable(path.join(dir, 'cargo'))) {
      binDir = dir;
      break;
    }
  }
  if (binDir === undefined)
    return { binDir: undefined, cargoHome: hints.cargoHome, rustupHome: hints.rustupHome };
  const cargoHome = hints.cargoHome ?? (SYSTEM_BIN_DIRS.includes(binDir) ? undefined : path.dirname(binDir));
  let rustupHome = hints.rustupHome;
  if (rustupHome === undefined && cargoHome !== undefined) {
    const real = await realpath(path.join(binDir, 'cargo')).catch(() => '');
    if (path.basename(real).startsWith('rustup')) {
      const parent = path.dirname(cargoHome);
      for (const candidate of [
        path.join(parent, '.rustup'),
        path.join(parent, 'rustup'),
        ...(home === undefined ? [] : [path.join(home, '.rustup')]),
      ]) {
        if (await isDirectory(path.join(candidate, 'toolchains'))) {
          rustupHome = candidate;
          break;
        }
      }
    }
  }
  return { binDir, cargoHome, rustupHome };
}

/** The fixed PATH of every command: the toolchain first, no empty or relative entry. */
export function fixedPath(toolchain: Toolchain): string {
  const dirs = [...(toolchain.binDir === undefined ? [] : [toolchain.binDir]), ...SYSTEM_BIN_DIRS];
  return [...new Set(dirs.filter((dir) => path.isAbsolute(dir)))].join(':');
}

function safeHomeDir(): string | undefined {
  try {
    // The password database, not $HOME: the environment is the config loader's business.
    const dir = userInfo().homedir;
    return path.isAbsolute(dir) ? dir : undefined;
  } catch {
    return undefined;
  }
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return (await stat(file)).isFile();
  } catch {
    return false;
  }
}

async function isDirectory(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => undefined))?.isDirectory() ?? false;
}

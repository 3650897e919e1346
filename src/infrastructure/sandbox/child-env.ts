import type { Toolchain } from './toolchain.ts';
import { fixedPath } from './toolchain.ts';

/** Where the private directories of one command are, as the command sees them. */
export interface PrivateDirs {
  readonly home: string;
  readonly cargoHome: string;
  readonly tmp: string;
}

/**
 * The complete environment of a command, built from nothing: a fixed PATH, a private HOME and
 * CARGO_HOME, the toolchain's RUSTUP_HOME, and the target directory pinned inside the workspace
 * (the environment outranks a `build.target-dir` in any cargo config). No variable of the
 * fabric's own environment is copied, so a build script that prints its environment shows none.
 */
export function childEnv(
  root: string,
  toolchain: Toolchain,
  dirs: PrivateDirs,
  network: boolean,
): Record<string, string> {
  return {
    PATH: fixedPath(toolchain),
    HOME: dirs.home,
    TMPDIR: dirs.tmp,
    LANG: 'C.UTF-8',
    LC_ALL: 'C.UTF-8',
    TERM: 'dumb',
    CARGO_HOME: dirs.cargoHome,
    CARGO_TARGET_DIR: `${root}/target`,
    CARGO_TERM_COLOR: 'never',
    CARGO_TERM_PROGRESS_WHEN: 'never',
    // Without network cargo should fail at once rather than time out on a download.
    CARGO_NET_OFFLINE: network ? 'false' : 'true',
    ...(toolchain.rustupHome === undefined ? {} : { RUSTUP_HOME: toolchain.rustupHome }),
  };
}

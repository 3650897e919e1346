import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';

/**
 * Where the daemon keeps its runs, state and database for a repository (SPEC §11.1): the runs
 * directory of the config, unless that lies inside the repository's work tree, where it would
 * show in `git status` (and make the next start refuse a dirty tree). Then it is
 * `<git dir>/fabric/runs`: beside the daemon's lock, never part of the work tree.
 */
export function daemonRunsDir(runsDir: string, repo: string): string {
  const top = workTreeOf(repo);
  if (top === null || !inside(top, runsDir)) return runsDir;
  const gitDir = gitDirOf(top);
  return gitDir === null ? runsDir : join(gitDir, 'fabric', 'runs');
}

/**
 * The runs directory `fabric serve` uses. Inside a git work tree it never writes there (issue 34:
 * its database in the tree made the next `fabric daemon` refuse a dirty tree, and `git status`
 * was no longer empty): the default `./runs` (`set` false) moves to the daemon's directory in the
 * git directory (`daemonRunsDir`), and so does any runs directory in the tree of a repository a
 * daemon works in (its `openspec/`, or the daemon's runs already there), so the server shows the
 * daemon's runs. A runs directory the user set, in a repository no daemon works in, is kept.
 * Whatever it moved from is still read (`fabric serve` passes it to the Fabric), so the runs
 * `fabric run` wrote there stay listed. docs/adr/0021-serve-runs-dir.md says why.
 */
export function servedRunsDir(runsDir: string, set: boolean): string {
  const top = workTreeOf(runsDir);
  if (top === null) return runsDir;
  const daemons = gitRunsDirOf(top);
  const daemonRepo = existsSync(join(top, 'openspec')) || (daemons !== null && existsSync(daemons));
  return daemonRepo || !set ? daemonRunsDir(runsDir, top) : runsDir;
}

/**
 * The runs directory a daemon keeps in the git directory of the work tree `path` lies in
 * (`.git/fabric/runs`), whatever config it ran with; null outside a work tree.
 */
export function gitRunsDirOf(path: string): string | null {
  const top = workTreeOf(path);
  const gitDir = top === null ? null : gitDirOf(top);
  return gitDir === null ? null : join(gitDir, 'fabric', 'runs');
}

/** The top of the git work tree a path lies in (the nearest directory holding `.git`), or null. */
export function workTreeOf(path: string): string | null {
  let dir = resolve(path);
  for (;;) {
    if (existsSync(join(dir, '.git'))) return dir;
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

function inside(top: string, path: string): boolean {
  const rel = relative(top, resolve(path));
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
}

/** `.git` itself, or where a `.git` file (a linked work tree, a submodule) points. */
function gitDirOf(top: string): string | null {
  const dotGit = join(top, '.git');
  try {
    if (statSync(dotGit).isDirectory()) return dotGit;
    const match = /^gitdir:\s*(.+?)\s*$/m.exec(readFileSync(dotGit, 'utf8'));
    return match ? resolve(top, match[1]!) : null;
  } catch {
    return null;
  }
}

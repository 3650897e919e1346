import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { DaemonStateStore } from '../../application/daemon/daemon-ports.ts';
import type { DaemonState } from '../../application/daemon/daemon-state.ts';
import process from 'node:process';
import { FabricError } from '../../domain/errors.ts';

/** The directory that holds every repository's daemon state under a runs directory. */
export function daemonStatesDir(runsDir: string): string {
  return join(runsDir, 'daemon');
}

/** `<runs_dir>/daemon/<repo name>-<hash of its path>/state.json`: one per repository. */
export function stateFilePath(runsDir: string, repo: string): string {
  const hash = createHash('sha256').update(repo).digest('hex').slice(0, 12);
  return join(daemonStatesDir(runsDir), `${basename(repo) || 'repo'}-${hash}`, 'state.json');
}

/**
 * The daemon's state as a JSON file under the runs directory: outside the repository (the tree
 * stays clean) and readable when the control plane is off. Written whole, by rename.
 */
export class StateFile implements DaemonStateStore {
  readonly path: string;

  constructor(runsDir: string, repo: string) {
    this.path = stateFilePath(runsDir, repo);
  }

  async load(): Promise<DaemonState | null> {
    let text: string;
    try {
      text = await readFile(this.path, 'utf8');
    } catch {
      return null;
    }
    try {
      const state = JSON.parse(text) as DaemonState;
      if (state.version !== 1 || !Array.isArray(state.tasks)) throw new Error('not a version 1 state');
      return state;
    } catch (error) {
      throw new FabricError(
        'usage',
        `${this.path}: the daemon's state file is not readable (${String(error)}). Move it away to start afresh.`,
      );
    }
  }

  async save(state: DaemonState): Promise<void> {
    await mkdir(join(this.path, '..'), { recursive: true });
    const temp = `${this.path}.${process.pid}.tmp`;
    await writeFile(temp, `${JSON.stringify(state, null, 2)}\n`);
    await rename(temp, this.path);
  }
}

/** The repositories a daemon has worked on, from the state files under the runs directory. */
export async function daemonRepos(runsDir: string): Promise<string[]> {
  const dirs = await readdir(daemonStatesDir(runsDir), { withFileTypes: true }).catch(() => []);
  const repos: string[] = [];
  for (const dir of dirs.filter((entry) => entry.isDirectory())) {
    try {
      const state = JSON.parse(
        await readFile(join(daemonStatesDir(runsDir), dir.name, 'state.json'), 'utf8'),
      ) as {
        repo?: unknown;
      };
      if (typeof state.repo === 'string') repos.push(state.repo);
    } catch {
      // A state file being written, or not one: skipped.
    }
  }
  return repos.sort();
}

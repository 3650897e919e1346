import { readdir, readFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { buildStatus, type DaemonStatus } from '../../application/daemon/daemon-status.ts';
import { daemonStatesDir, StateFile } from '../../infrastructure/daemon/state-file.ts';
import { OpenSpecFiles } from '../../infrastructure/openspec/openspec-files.ts';
import { pidState } from '../../infrastructure/process/process-liveness.ts';

/**
 * The daemon's status for a repository, from its checklists and the state file under the runs
 * directory: readable with the control plane off and with no daemon running.
 */
export async function readDaemonStatus(repo: string, runsDir: string): Promise<DaemonStatus> {
  const state = await new StateFile(runsDir, repo).load();
  const scan = await new OpenSpecFiles(repo).scan();
  const running = state?.pid != null && state.host === hostname() && pidState(state.pid) === 'alive';
  return buildStatus(repo, scan, state, running);
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

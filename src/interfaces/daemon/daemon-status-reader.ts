import { hostname } from 'node:os';
import process from 'node:process';
import { buildStatus, type DaemonStatus } from '../../application/daemon/daemon-status.ts';
import { StateFile } from '../../infrastructure/daemon/state-file.ts';
import { OpenSpecFiles } from '../../infrastructure/openspec/openspec-files.ts';

/**
 * The daemon's status for a repository, from its checklists and the state file under the runs
 * directory: readable with the control plane off and with no daemon running.
 */
export async function readDaemonStatus(repo: string, runsDir: string): Promise<DaemonStatus> {
  const state = await new StateFile(runsDir, repo).load();
  const scan = await new OpenSpecFiles(repo).scan();
  const running = state?.pid != null && state.host === hostname() && isAlive(state.pid);
  return buildStatus(repo, scan, state, running);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

import { open, readFile, rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import process from 'node:process';
import { FabricError } from '../../domain/errors.ts';

/**
 * Takes a lock file (created exclusively, holding pid and host). A lock left by a process that
 * is gone (same host, pid not running) is taken over; a live one is refused with its pid.
 */
export async function acquireLock(path: string, what: string): Promise<() => Promise<void>> {
  const me = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() });
  for (let tries = 0; tries < 3; tries += 1) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(me);
      await handle.close();
      return async () => {
        // Only our own lock is removed.
        if ((await readFile(path, 'utf8').catch(() => '')) === me) await rm(path, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = parseHolder(await readFile(path, 'utf8').catch(() => ''));
    if (holder !== null && (holder.host !== hostname() || isRunning(holder.pid))) {
      throw new FabricError(
        'usage',
        `Another daemon (pid ${holder.pid} on ${holder.host}) is working on ${what}; one daemon per repository. Stop it first, or remove ${path} if it is gone.`,
      );
    }
    await rm(path, { force: true });
  }
  throw new FabricError('usage', `Could not take the daemon lock ${path}; try again.`);
}

function parseHolder(text: string): { pid: number; host: string } | null {
  try {
    const value = JSON.parse(text) as { pid?: unknown; host?: unknown };
    return typeof value.pid === 'number' && typeof value.host === 'string'
      ? { pid: value.pid, host: value.host }
      : null;
  } catch {
    return null;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

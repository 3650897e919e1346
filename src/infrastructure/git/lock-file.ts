import { hostname } from 'node:os';
import process from 'node:process';
import { FabricError } from '../../domain/errors.ts';
import { pidState } from '../process/process-liveness.ts';
import { releasePidFile, takePidFile } from '../process/pid-file.ts';

/**
 * Takes a lock file (created exclusively, holding pid and host). A lock left by a process that
 * is gone (same host, pid not running) is taken over; a live one is refused with its pid.
 */
export async function acquireLock(path: string, what: string): Promise<() => Promise<void>> {
  const me = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() });
  const attempt = await takePidFile(path, me, { attempts: 3, holder: liveHolder });
  // Only our own lock is removed.
  if (attempt.taken) return () => releasePidFile(path, me);
  const holder = attempt.holder;
  if (holder === undefined)
    throw new FabricError('usage', `Could not take the daemon lock ${path}; try again.`);
  throw new FabricError(
    'usage',
    `Another daemon (pid ${holder.pid} on ${holder.host}) is working on ${what}; one daemon per repository. Stop it first, or remove ${path} if it is gone.`,
  );
}

/** The lock's holder while it may be running: on another host, or a live pid on this one. */
function liveHolder(text: string): { pid: number; host: string } | undefined {
  const holder = parseHolder(text);
  if (holder === null) return undefined;
  return holder.host !== hostname() || pidState(holder.pid) === 'alive' ? holder : undefined;
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

import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { pid } from 'node:process';
import { releasePidFile, takePidFile } from '../process/pid-file.ts';
import { pidState } from '../process/process-liveness.ts';

/** Thrown when another live process (or this one) holds the lock. */
export class LockHeldError extends Error {
  readonly holder: number;

  constructor(path: string, holder: number) {
    super(
      holder === pid
        ? `${path} is already open in this process.`
        : `${path} is held by process ${holder}: the embedded control database serves one process at a time, and that process writes this one's runs into it from their runlogs.`,
    );
    this.name = 'LockHeldError';
    this.holder = holder;
  }
}

/**
 * Whether the error (or its cause) is a lock another live process holds: for the embedded
 * database, that process is its holder and writes this one's runs in from their runlogs (SPEC §7),
 * so this is no outage to report.
 */
export function heldByAnotherProcess(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    if (e instanceof LockHeldError) return e.holder > 0 && e.holder !== pid;
  }
  return false;
}

/**
 * Takes an exclusive lock file holding this process's pid, for a resource that must not be
 * opened twice: PGlite is one Postgres backend writing its data directory, and two processes
 * on one directory corrupt it. A lock left by a process that died is taken over.
 * Returns the release function.
 */
export async function acquireLock(path: string): Promise<() => Promise<void>> {
  await mkdir(dirname(path), { recursive: true });
  const attempt = await takePidFile(path, String(pid), { attempts: 2, holder: liveHolder });
  if (attempt.taken) return () => releasePidFile(path);
  throw new LockHeldError(path, attempt.holder ?? 0);
}

/** The pid in the lock while that process lives (this one included); `undefined` when stale. */
function liveHolder(text: string): number | undefined {
  const holder = Number.parseInt(text, 10);
  if (!Number.isInteger(holder) || holder <= 0) return undefined;
  return holder === pid || pidState(holder) === 'alive' ? holder : undefined;
}

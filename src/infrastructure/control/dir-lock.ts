import { mkdir, open, readFile, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { kill, pid } from 'node:process';

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
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      const handle = await open(path, 'wx');
      await handle.writeFile(String(pid));
      await handle.close();
      return async () => {
        await unlink(path).catch(() => {});
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10);
    if (Number.isInteger(holder) && holder > 0 && isAlive(holder)) throw new LockHeldError(path, holder);
    await unlink(path).catch(() => {});
  }
  throw new LockHeldError(path, 0);
}

function isAlive(processId: number): boolean {
  if (processId === pid) return true;
  try {
    kill(processId, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

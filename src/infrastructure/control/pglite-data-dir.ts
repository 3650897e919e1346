import { execFile } from 'node:child_process';
import { rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const INIT_TIMEOUT_MS = 180_000;

/**
 * Makes sure the embedded database's data directory exists, creating it (initdb) in a child
 * process that exits afterwards, so that the one-time memory peak of initdb (~800 MB) is not
 * held by a long-lived server (a reopened store peaks near 220 MB). Under Deno, or
 * when the runtime cannot be started again, the worker creates the directory itself on open.
 * Call with the directory's lock held. `signal` stops the child (the store is closing).
 * `cacheDir` (the fabric's cache, or null for none) keeps initdb's output once per PGlite
 * version, and later directories are unpacked from it (see pglite-init.mjs).
 */
export async function ensureDataDir(
  dataDir: string,
  options: { readonly signal?: AbortSignal; readonly cacheDir?: string | null } = {},
): Promise<void> {
  const { signal, cacheDir } = options;
  if (await exists(join(dataDir, 'PG_VERSION'))) return;
  if ((globalThis as { Deno?: unknown }).Deno !== undefined) return;
  const script = fileURLToPath(new URL('./pglite-init.mjs', import.meta.url));
  // Created beside the real place and moved in whole: a creation that is stopped or fails
  // leaves no half-made data directory for the next open to take for a database.
  const pending = `${dataDir}.creating-${process.pid}`;
  await rm(pending, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        process.execPath,
        cacheDir ? [script, pending, cacheDir] : [script, pending],
        { timeout: INIT_TIMEOUT_MS, ...(signal === undefined ? {} : { signal }) },
        (error, _stdout, stderr) => {
          if (error === null) resolve();
          else
            reject(
              new Error(
                `Could not create the embedded control database in ${dataDir}: ${stderr.trim() || error.message}`,
                { cause: error },
              ),
            );
        },
      );
    });
    await rm(dataDir, { recursive: true, force: true });
    await rename(pending, dataDir);
  } finally {
    await rm(pending, { recursive: true, force: true });
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

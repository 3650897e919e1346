/**
 * The mechanics of a pid-file lock, shared by the daemon's repository lock, the embedded
 * database's lock and the workspace locks: the file is created exclusively with the
 * holder's description; when it exists, the caller reads its holder and says whether the holder
 * is stale (its process gone: the file is removed and taken) or still there. What a holder is,
 * and what a live one means (an error, a wait), stays with each lock.
 */
import { open, readFile, rm } from 'node:fs/promises';

/** How an attempt to take a pid file ended. */
export type PidFileAttempt<H> =
  /** The file is ours; `releasePidFile` gives it back. */
  | { readonly taken: true }
  /** A live holder has it; `undefined` when a stale holder was still there after every attempt. */
  | { readonly taken: false; readonly holder: H | undefined };

/** How to read the holder of a pid file. */
export interface PidFileOptions<H> {
  /** How many times to create the file, removing a stale holder's in between. */
  readonly attempts: number;
  /**
   * The holder that the file's text (`''` when it cannot be read) describes, or `undefined` when
   * that holder is stale and the file may be removed.
   */
  readonly holder: (text: string) => H | undefined;
}

/**
 * Creates `file` holding `content` unless it exists; a file left by a stale holder is removed
 * and created again, up to `options.attempts` times.
 */
export async function takePidFile<H>(
  file: string,
  content: string,
  options: PidFileOptions<H>,
): Promise<PidFileAttempt<H>> {
  for (let attempt = 0; attempt < options.attempts; attempt += 1) {
    if (await createExclusive(file, content)) return { taken: true };
    const holder = options.holder(await readFile(file, 'utf8').catch(() => ''));
    if (holder !== undefined) return { taken: false, holder };
    await rm(file, { force: true });
  }
  return { taken: false, holder: undefined };
}

/**
 * Removes a pid file; with `content`, only while the file still holds it (a lock taken over
 * since is another holder's). A file already gone is released.
 */
export async function releasePidFile(file: string, content?: string): Promise<void> {
  if (content !== undefined && (await readFile(file, 'utf8').catch(() => '')) !== content) return;
  await rm(file, { force: true }).catch(() => {});
}

/** Creates `file` with `content`; `false` when it exists already. */
async function createExclusive(file: string, content: string): Promise<boolean> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'wx');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    await handle.writeFile(content);
  } finally {
    await handle.close();
  }
  return true;
}

/**
 * A run's inbox (ADR 0019): `<runsDir>/<run_id>/inbox.jsonl`, append-only, one JSON entry a line.
 * Any process with the runs directory appends (`fabric steer`, `fabric serve`); the process that
 * owns the run reads it between steps. A line is written with one append, so a reader sees it
 * whole or not yet; a torn last line (never whole) is left for the next read.
 */
import { Buffer } from 'node:buffer';
import { appendFile, open, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { InboxEntry, InboxReader, RunInboxes } from '../../application/run/steering.ts';
import { FabricError } from '../../domain/errors.ts';

export const INBOX_FILE = 'inbox.jsonl';

export class FileRunInboxes implements RunInboxes {
  readonly #runsDir: string;

  constructor(runsDir: string) {
    this.#runsDir = resolve(runsDir);
  }

  pathOf(runId: string): string {
    return join(this.#runsDir, runId, INBOX_FILE);
  }

  reader(runId: string, options: { readonly fromEnd?: boolean } = {}): InboxReader {
    return new FileInboxReader(this.pathOf(runId), options.fromEnd === true);
  }

  async post(runId: string, entry: InboxEntry): Promise<void> {
    const path = this.pathOf(runId);
    try {
      // After a torn last line (a writer that died mid-line), a line of its own, not glued to it.
      const lead = (await endsTorn(path)) ? '\n' : '';
      await appendFile(path, `${lead}${JSON.stringify(entry)}\n`, { flag: 'a' });
    } catch (error) {
      throw new FabricError(
        'runlog_unwritable',
        `Cannot write to the inbox of run ${runId} (${path}): ${String(error)}. The runs directory must be writable by this user.`,
        { cause: error },
      );
    }
  }
}

/** Whether the file's last byte ends a line; false for a file that is empty or not there. */
async function endsTorn(path: string): Promise<boolean> {
  const handle = await open(path, 'r').catch(() => null);
  if (handle === null) return false;
  try {
    const { size } = await handle.stat();
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    await handle.read(last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    await handle.close();
  }
}

class FileInboxReader implements InboxReader {
  readonly #path: string;
  #offset: number | undefined;

  constructor(path: string, fromEnd: boolean) {
    this.#path = path;
    this.#offset = fromEnd ? undefined : 0;
  }

  async read(): Promise<readonly InboxEntry[]> {
    if (this.#offset === undefined) {
      // A resumed run starts after what its previous process already read.
      this.#offset = await stat(this.#path).then(
        (info) => info.size,
        () => 0,
      );
      return [];
    }
    const handle = await open(this.#path, 'r').catch(() => null);
    if (handle === null) return [];
    try {
      const { size } = await handle.stat();
      if (size <= this.#offset) return [];
      const buffer = Buffer.alloc(size - this.#offset);
      await handle.read(buffer, 0, buffer.length, this.#offset);
      const end = buffer.lastIndexOf(0x0a);
      if (end < 0) return [];
      this.#offset += end + 1;
      const entries: InboxEntry[] = [];
      for (const line of buffer.subarray(0, end).toString('utf8').split('\n')) {
        if (line.trim() === '') continue;
        try {
          entries.push(JSON.parse(line) as InboxEntry);
        } catch {
          // A line no process of ours wrote whole: skipped, never applied half.
        }
      }
      return entries;
    } finally {
      await handle.close();
    }
  }
}

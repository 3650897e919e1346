import { Buffer } from 'node:buffer';
import { fdatasyncSync, ftruncateSync, writeSync } from 'node:fs';
import { mkdir, open, readdir, readFile, stat, truncate } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type {
  Clock,
  ResumableRunLogs,
  RunLog,
  RunLogContents,
  RunLogStore,
  RunLogTails,
} from '../../application/ports.ts';
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent, RunEventInput } from '../../domain/run-events.ts';
import { parseRunlog } from './parse-runlog.ts';
import { systemClock } from '../clock.ts';
import { stampEvent } from './stamp.ts';

export const RUNLOG_FILE = 'runlog.jsonl';

/** `<runsDir>/<run_id>/runlog.jsonl`, append-only, one JSON object a line. */
export class FileRunLogStore implements RunLogStore, ResumableRunLogs, RunLogTails {
  readonly runsDir: string;
  readonly #clock: Clock;

  constructor(runsDir: string, clock: Clock = systemClock) {
    this.runsDir = resolve(runsDir);
    this.#clock = clock;
  }

  /** The runlog path of a run id. */
  pathOf(runId: string): string {
    return join(this.runsDir, runId, RUNLOG_FILE);
  }

  async create(runId: string): Promise<RunLog> {
    const dir = join(this.runsDir, runId);
    try {
      await mkdir(dir, { recursive: true });
    } catch (error) {
      throw new FabricError(
        'runlog_unwritable',
        `Cannot create the run directory ${dir}: ${String(error)}. Set FABRIC_RUNS_DIR to a writable directory.`,
        { cause: error },
      );
    }
    // 'wx': a run id is never reused, so an existing file means something is wrong.
    let handle: FileHandle;
    try {
      handle = await open(join(dir, RUNLOG_FILE), 'wx');
    } catch (error) {
      if ((error as { code?: unknown }).code === 'EEXIST') throw error;
      throw unwritable(join(dir, RUNLOG_FILE), error);
    }
    return new FileRunLog(runId, join(dir, RUNLOG_FILE), handle, this.#clock);
  }

  async reopen(runId: string): Promise<RunLog> {
    const path = this.pathOf(runId);
    const text = await readFile(path, 'utf8').catch((error: unknown) => {
      throw new FabricError('run_not_found', `Cannot read runlog ${path}: ${String(error)}`, {
        cause: error,
      });
    });
    const { events, torn } = parseRunlog(text, path);
    // A torn last line (a killed process) is dropped, so the next line starts on a line of its own.
    const whole = Buffer.byteLength(text.slice(0, text.lastIndexOf('\n') + 1), 'utf8');
    if (torn) await truncate(path, whole);
    const handle = await open(path, 'a');
    return new FileRunLog(runId, path, handle, this.#clock, events.at(-1)?.seq ?? 0, whole);
  }

  async read(ref: string): Promise<RunLogContents> {
    const path = await this.#locate(ref);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new FabricError('run_not_found', `Cannot read runlog ${path}: ${String(error)}`, {
        cause: error,
      });
    }
    const { events, torn } = parseRunlog(text, path);
    const runId = events[0]?.run_id ?? basename(dirname(path));
    return { runId, location: path, events, torn };
  }

  async list(): Promise<readonly string[]> {
    let entries: string[];
    try {
      entries = await readdir(this.runsDir);
    } catch {
      return [];
    }
    const ids: string[] = [];
    for (const entry of entries) {
      if (entry.startsWith('.')) continue;
      if (await isFile(join(this.runsDir, entry, RUNLOG_FILE))) ids.push(entry);
    }
    // Run ids start with a UTC timestamp, so name order is time order.
    return ids.sort().reverse();
  }

  /** The seq of the last whole line, from the file's tail (64 KiB); null when that holds no whole line. */
  async lastSeq(runId: string): Promise<number | null> {
    return lastLineSeq(this.pathOf(runId));
  }

  /** A path (file or run directory), a run id, or a unique prefix of one. */
  async #locate(ref: string): Promise<string> {
    // An empty id would be the start of every id, and name the only run there is.
    if (ref.trim() === '')
      throw new FabricError('run_not_found', 'A run id cannot be empty. `fabric runs` lists the runs.');
    if (ref.includes('/') || ref.endsWith('.jsonl')) {
      const path = resolve(ref);
      if (await isFile(path)) return path;
      if (await isFile(join(path, RUNLOG_FILE))) return join(path, RUNLOG_FILE);
      throw new FabricError('run_not_found', `No runlog at ${path}.`);
    }
    if (await isFile(this.pathOf(ref))) return this.pathOf(ref);
    const matches = (await this.list()).filter((id) => id.startsWith(ref));
    if (matches.length === 1) return this.pathOf(matches[0]!);
    if (matches.length > 1) {
      throw new FabricError(
        'run_not_found',
        `"${ref}" matches ${matches.length} runs; give more of the run id.`,
      );
    }
    throw new FabricError(
      'run_not_found',
      `No run "${ref}" in ${this.runsDir}. \`fabric runs\` lists the runs.`,
    );
  }
}

/**
 * One run's runlog file. Each line is written synchronously before `append` resolves: a line
 * into the page cache takes microseconds, where an awaited `appendFile` costs a thread-pool
 * round trip per event (~0.1 ms; about 200 events make a third of a 50-step run's overhead).
 * So lines land in seq order, a reader of a live run sees every event already recorded, and a
 * failed write rejects the very `append` that made it. `close` makes the file durable.
 */
class FileRunLog implements RunLog {
  readonly runId: string;
  readonly location: string;
  readonly #handle: FileHandle;
  readonly #clock: Clock;
  #seq = 0;
  /** The bytes of whole lines written: a line cut by a full disk is truncated back to here. */
  #size = 0;
  #closed = false;
  /** The first failed write: the lines after it would follow a torn one, so none are written. */
  #failure: FabricError | undefined;

  constructor(runId: string, location: string, handle: FileHandle, clock: Clock, seq = 0, size = 0) {
    this.#seq = seq;
    this.#size = size;
    this.runId = runId;
    this.location = location;
    this.#handle = handle;
    this.#clock = clock;
  }

  append(event: RunEventInput): Promise<RunEvent> {
    if (this.#closed)
      return Promise.reject(new FabricError('internal', `The runlog of ${this.runId} is closed.`));
    if (this.#failure) return Promise.reject(this.#failure);
    this.#seq += 1;
    const stamped = stampEvent(event, this.runId, this.#seq, this.#clock);
    try {
      this.#size += writeLine(this.#handle.fd, `${JSON.stringify(stamped)}\n`);
      // The marker of an effect is on disk before the effect (SPEC §18): a machine that loses
      // power after an edit still has the line that says the edit started.
      if (event.kind === 'tool_started') fdatasyncSync(this.#handle.fd);
    } catch (error) {
      // The part of the line that did get written goes: the runlog ends with its last whole
      // line, which every reader takes (SPEC §6). Truncating needs no free space.
      try {
        ftruncateSync(this.#handle.fd, this.#size);
      } catch {
        // At worst the last line stays torn, which a reader tolerates too.
      }
      this.#failure = unwritable(this.location, error);
      return Promise.reject(this.#failure);
    }
    return Promise.resolve(stamped);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#handle.datasync();
    } finally {
      await this.#handle.close();
    }
    // The runlog is the record: a log that lost a line does not close cleanly.
    if (this.#failure) throw this.#failure;
  }
}

/** Writes all of `text` and returns its bytes; `writeSync` may write part of it (a full disk, a signal). */
function writeLine(fd: number, text: string): number {
  const length = Buffer.byteLength(text, 'utf8');
  const written = writeSync(fd, text);
  if (written === length) return length;
  const bytes = Buffer.from(text, 'utf8');
  for (let offset = written; offset < length; ) offset += writeSync(fd, bytes, offset, length - offset);
  return length;
}

/** A runlog that cannot be written (a full disk, a read-only or unwritable runs directory). */
function unwritable(location: string, error: unknown): FabricError {
  return new FabricError(
    'runlog_unwritable',
    `Cannot write the runlog ${location}: ${String(error)}. Free disk space or set FABRIC_RUNS_DIR to a writable directory.`,
    { cause: error },
  );
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

const TAIL_BYTES = 64 * 1024;

/** The `seq` of a runlog's last whole line, read from its last 64 KiB; null when it has none there. */
async function lastLineSeq(path: string): Promise<number | null> {
  const handle = await open(path, 'r').catch(() => null);
  if (handle === null) return null;
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, TAIL_BYTES);
    const tail = Buffer.alloc(length);
    await handle.read(tail, 0, length, size - length);
    const text = tail.toString('utf8');
    // The last whole line ends at the last newline (a torn line after it is not a line yet).
    const end = text.lastIndexOf('\n');
    const start = text.lastIndexOf('\n', end - 1);
    if (end < 0 || (start < 0 && length < size)) return null;
    const seq = (JSON.parse(text.slice(start + 1, end)) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? seq : null;
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

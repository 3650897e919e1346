/**
 * A workspace as one archive: a battery's workspace is packed once, stored in the
 * queue's database, and unpacked by a worker into a fresh directory for each cell.
 *
 * The format is ours and small on purpose (no dependency for ~100 lines): gzip over a sequence
 * of entries, each a JSON header line (`p` path, `t` f|d|l, `m` mode, `s` size, `l` link target)
 * followed by `s` bytes of content. What is left out is what the cells' copies leave out
 * (left-out.ts): `.git/` anywhere, `target/` at the root, and the runs directory.
 */
import { lstat, mkdir, readdir, readFile, readlink, realpath, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { FabricError } from '../../domain/errors.ts';
import { isInside } from '../sandbox/is-inside.ts';
import { isLeftOut, realLeaveOut } from './left-out.ts';

const MAGIC = 'fabric-archive 1\n';
const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

interface EntryHeader {
  readonly p: string;
  readonly t: 'f' | 'd' | 'l';
  readonly m: number;
  readonly s: number;
  readonly l?: string;
}

/** How big a workspace may be, and what names the limit in an error. */
export interface ArchiveLimit {
  /** Bytes of file content, before compression. */
  readonly maxBytes: number;
  /** The config key that sets it, for the error message. */
  readonly key: string;
}

/**
 * Packs `source` (its files' content bounded by `limit`, counted before compression). Throws
 * `workspace_too_large` past the limit, naming it and its config key; stops reading there.
 */
export async function packWorkspace(
  source: string,
  limit: ArchiveLimit,
  leaveOut: readonly string[] = [],
): Promise<Uint8Array> {
  const root = await realpath(source);
  const paths = await realLeaveOut(leaveOut);
  const chunks: Buffer[] = [Buffer.from(MAGIC)];
  let total = 0;
  const add = (header: EntryHeader, content?: Buffer) => {
    chunks.push(Buffer.from(`${JSON.stringify(header)}\n`));
    if (content !== undefined) chunks.push(content);
  };
  const walk = async (dir: string): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const full = path.join(dir, name);
      const relative = path.relative(root, full);
      if (isLeftOut(root, full, { paths })) continue;
      const stat = await lstat(full);
      const p = relative.split(path.sep).join('/');
      if (stat.isSymbolicLink()) add({ p, t: 'l', m: 0, s: 0, l: await readlink(full) });
      else if (stat.isDirectory()) {
        add({ p, t: 'd', m: stat.mode & 0o777, s: 0 });
        await walk(full);
      } else if (stat.isFile()) {
        total += stat.size;
        if (total > limit.maxBytes) throw tooLarge(root, limit);
        const content = await readFile(full);
        add({ p, t: 'f', m: stat.mode & 0o777, s: content.length }, content);
      }
    }
  };
  await walk(root);
  return new Uint8Array(await gzipAsync(Buffer.concat(chunks)));
}

/** Unpacks an archive into `target` (which must exist and be empty). Refuses paths that leave it. */
export async function unpackWorkspace(archive: Uint8Array, target: string): Promise<void> {
  const data = await gunzipAsync(archive);
  if (data.subarray(0, MAGIC.length).toString() !== MAGIC)
    throw new FabricError(
      'internal',
      'The workspace archive is not one this version of agent-fabric wrote: run the server and its workers at the same version, and run the battery again.',
    );
  let at = MAGIC.length;
  while (at < data.length) {
    const end = data.indexOf(0x0a, at);
    if (end < 0)
      throw new FabricError(
        'internal',
        'The workspace archive is cut short (damaged in the queue database): run the battery again, which archives its workspace anew.',
      );
    const header = JSON.parse(data.subarray(at, end).toString()) as EntryHeader;
    at = end + 1;
    const full = path.resolve(target, header.p);
    if (path.isAbsolute(header.p) || !isInside(target, full) || full === target)
      throw new FabricError(
        'sandbox_violation',
        `The workspace archive names a path outside it: ${header.p}`,
      );
    if (header.t === 'd') await mkdir(full, { recursive: true, mode: header.m | 0o700 });
    else if (header.t === 'l') await symlink(header.l ?? '', full);
    else {
      await writeFile(full, data.subarray(at, at + header.s), { mode: header.m | 0o600 });
      at += header.s;
    }
  }
}

function tooLarge(root: string, limit: ArchiveLimit): FabricError {
  const mib = Math.round((limit.maxBytes / 1024 / 1024) * 100) / 100;
  return new FabricError(
    'workspace_too_large',
    `The workspace ${root} holds more than ${mib} MiB of files (target/ and .git/ left out), the limit of an archive on the queue (${limit.key}). Raise ${limit.key} in the config, or make the workspace smaller.`,
  );
}

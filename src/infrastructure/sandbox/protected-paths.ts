import { lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Files that are code to the toolchain or to git: cargo runs what `.cargo/config*` names
 * (rustc wrappers, runners, linkers), rustup runs the toolchain a `rust-toolchain*` file points
 * at, and git runs hooks and the programs `.git/config` names. Writing one is a way out of the
 * sandbox the next time the user runs cargo or git outside it.
 */
export function isProtectedPath(relative: string): boolean {
  const parts = relative.toLowerCase().split(/[\\/]+/);
  return parts.some(
    (part, index) =>
      part === '.git' ||
      part.startsWith('rust-toolchain') ||
      (part === '.cargo' && (parts[index + 1]?.startsWith('config') ?? false)),
  );
}

/** Paths the file tools do not even read: git internals may hold credentials in remote URLs. */
export function isUnreadablePath(relative: string): boolean {
  return relative
    .toLowerCase()
    .split(/[\\/]+/)
    .includes('.git');
}

/** The root-level entries a command must leave as they were. */
export const GUARDED_ROOT_ENTRIES = [
  '.cargo',
  'rust-toolchain',
  'rust-toolchain.toml',
  '.git',
  '.git/config',
  '.git/hooks',
];

/** Recorded by kind only: a `.git` that appears makes the workspace a repository git would trust. */
const SHALLOW = new Set(['.git']);

const MAX_SNAPSHOT_FILES = 500;
const MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024;

/** The guarded entries as they were before a command: every file's bytes, every directory. */
export type GuardSnapshot = ReadonlyMap<string, Buffer | 'dir' | 'link'>;

/**
 * Records the guarded entries of a workspace (small: config files and hooks), and `extra`
 * files relative to the root (the fabric's config file when it lies in the workspace).
 */
export async function snapshotGuarded(root: string, extra: readonly string[] = []): Promise<GuardSnapshot> {
  const entries = new Map<string, Buffer | 'dir' | 'link'>();
  let bytes = 0;
  const visit = async (relative: string): Promise<void> => {
    if (entries.size >= MAX_SNAPSHOT_FILES || bytes > MAX_SNAPSHOT_BYTES) return;
    const absolute = path.join(root, relative);
    const stat = await lstat(absolute).catch(() => undefined);
    if (stat === undefined) return;
    if (stat.isSymbolicLink()) entries.set(relative, 'link');
    else if (stat.isDirectory()) {
      entries.set(relative, 'dir');
      if (SHALLOW.has(relative)) return;
      for (const name of await readdir(absolute)) await visit(path.join(relative, name));
    } else if (stat.isFile()) {
      const content = await readFile(absolute);
      bytes += content.length;
      entries.set(relative, content);
    }
  };
  for (const entry of [...GUARDED_ROOT_ENTRIES, ...extra]) if (!entries.has(entry)) await visit(entry);
  return entries;
}

/**
 * Puts the guarded entries back as the snapshot recorded them: what a command created is
 * removed, what it changed or deleted is restored. Returns the paths that had to be repaired.
 */
export async function restoreGuarded(
  root: string,
  before: GuardSnapshot,
  extra: readonly string[] = [],
): Promise<string[]> {
  const after = await snapshotGuarded(root, extra);
  const repaired: string[] = [];
  for (const [relative, now] of after) {
    const was = before.get(relative);
    if (was === undefined || kindOf(was) !== kindOf(now)) {
      if ([...repaired].some((done) => relative.startsWith(`${done}${path.sep}`))) continue;
      await rm(path.join(root, relative), { recursive: true, force: true });
      repaired.push(relative);
    }
  }
  for (const [relative, was] of before) {
    const now =
      (await lstat(path.join(root, relative)).catch(() => undefined)) === undefined
        ? undefined
        : after.get(relative);
    if (was === 'dir') {
      if (now === undefined) {
        await mkdir(path.join(root, relative), { recursive: true });
        repaired.push(relative);
      }
    } else if (Buffer.isBuffer(was) && (!Buffer.isBuffer(now) || !now.equals(was))) {
      await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
      await writeFile(path.join(root, relative), was);
      if (!repaired.includes(relative)) repaired.push(relative);
    }
  }
  return repaired;
}

function kindOf(entry: Buffer | 'dir' | 'link'): string {
  return Buffer.isBuffer(entry) ? 'file' : entry;
}

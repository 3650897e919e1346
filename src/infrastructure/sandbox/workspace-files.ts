import { constants } from 'node:fs';
import { lstat, mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../../domain/errors.ts';
import type { PathScope } from './path-scope.ts';

/** Reads larger than this are refused: the model should search, or read a smaller file. */
export const MAX_READ_BYTES = 256 * 1024;
/** Writes larger than this are refused: source files are not megabytes. */
export const MAX_WRITE_BYTES = 1024 * 1024;

/** A workspace file's text, or the fact that it is binary. */
export type FileText =
  | { readonly kind: 'text'; readonly text: string; readonly bytes: number }
  | { readonly kind: 'binary'; readonly bytes: number };

/** Reads a workspace file as UTF-8 text, bounded; binary content is reported, not returned. */
export async function readWorkspaceFile(scope: PathScope, requested: string): Promise<FileText> {
  const target = await scope.forRead(requested);
  const info = await stat(target.absolute);
  if (info.isDirectory())
    throw new ToolError(`${requested} is a directory; use list_files to see inside it.`);
  if (!info.isFile()) throw new ToolError(`${requested} is not a regular file.`);
  if (info.size > MAX_READ_BYTES) {
    throw new ToolError(
      `${requested} is ${info.size} bytes; read_file returns at most ${MAX_READ_BYTES}. Use search to find the part you need.`,
    );
  }
  // O_NOFOLLOW: the real path was checked; a link swapped in since then is not followed.
  const handle = await open(target.absolute, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const buffer = Buffer.alloc(MAX_READ_BYTES + 1);
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    const content = buffer.subarray(0, Math.min(bytesRead, MAX_READ_BYTES));
    return decodeText(content);
  } finally {
    await handle.close();
  }
}

/** UTF-8 text, or `binary` when the bytes hold a NUL or are not valid UTF-8. */
export function decodeText(content: Buffer): FileText {
  if (content.subarray(0, 8192).includes(0)) return { kind: 'binary', bytes: content.length };
  try {
    return {
      kind: 'text',
      text: new TextDecoder('utf-8', { fatal: true }).decode(content),
      bytes: content.length,
    };
  } catch {
    return { kind: 'binary', bytes: content.length };
  }
}

/**
 * Creates or replaces a workspace file. Missing parent folders are created one by one below the
 * checked real ancestor, and the file is opened with O_NOFOLLOW, so a write never follows a link.
 */
export async function writeWorkspaceFile(
  scope: PathScope,
  requested: string,
  content: string,
): Promise<number> {
  const bytes = Buffer.from(content, 'utf8');
  if (bytes.length > MAX_WRITE_BYTES) {
    throw new ToolError(
      `The content is ${bytes.length} bytes; write_file accepts at most ${MAX_WRITE_BYTES}.`,
    );
  }
  const target = await scope.forWrite(requested);
  if (target.relative === '.') throw new ToolError('write_file needs a file path, not the workspace root.');
  // Start at the deepest existing (checked, real) ancestor and create the rest one level at a time.
  let dir = path.resolve(target.absolute, ...target.missing.map(() => '..'));
  for (const part of target.missing.slice(0, -1)) {
    dir = path.join(dir, part);
    await mkdir(dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
    if (!(await lstat(dir)).isDirectory())
      throw new ToolError(`${path.relative(scope.root, dir)} is not a folder.`);
  }
  const existing = await lstat(target.absolute).catch(() => undefined);
  if (existing?.isDirectory()) throw new ToolError(`${requested} is a directory; write_file writes files.`);
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(
      target.absolute,
      constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
      0o644,
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new ToolError(
        `${requested} became a symbolic link while it was being written; nothing was written.`,
      );
    }
    throw error;
  }
  try {
    await handle.writeFile(bytes);
  } finally {
    await handle.close();
  }
  return bytes.length;
}

/**
 * Replaces exactly one occurrence of `oldText`; none or several is an error that says which.
 * Returns the file's text before and after, so the change can be recorded as a diff.
 */
/**
 * Whether an edit of `requested` (old_text → new_text) is in the file (SPEC §18): for a call that
 * started before its process died. `unknown` when the file cannot tell (it is gone, or both texts
 * or neither are there).
 */
export async function editApplied(
  scope: PathScope,
  requested: string,
  oldText: string,
  newText: string,
): Promise<'applied' | 'not_applied' | 'unknown'> {
  let text: string;
  try {
    const file = await readWorkspaceFile(scope, requested);
    if (file.kind === 'binary') return 'unknown';
    text = file.text;
  } catch {
    return 'unknown';
  }
  const count = (needle: string) => (needle === '' ? 0 : text.split(needle).length - 1);
  const olds = count(oldText);
  const news = count(newText);
  if (olds === 1 && news === 0) return 'not_applied';
  if (news >= 1 && (olds === 0 || newText.includes(oldText))) return 'applied';
  return 'unknown';
}

export async function editWorkspaceFile(
  scope: PathScope,
  requested: string,
  oldText: string,
  newText: string,
): Promise<{ readonly before: string; readonly after: string }> {
  if (oldText === '') throw new ToolError('old_text is empty; give the exact text to replace.');
  await scope.forWrite(requested);
  const file = await readWorkspaceFile(scope, requested);
  if (file.kind === 'binary') throw new ToolError(`${requested} is a binary file; edit_file edits text.`);
  const first = file.text.indexOf(oldText);
  if (first === -1) {
    throw new ToolError(
      `old_text was not found in ${requested}. Read the file again and copy the text exactly, whitespace included.`,
    );
  }
  let count = 0;
  for (let at = first; at !== -1; at = file.text.indexOf(oldText, at + 1)) count++;
  if (count > 1) {
    throw new ToolError(
      `old_text occurs ${count} times in ${requested}; include more surrounding lines so it matches exactly once.`,
    );
  }
  const after = file.text.slice(0, first) + newText + file.text.slice(first + oldText.length);
  await writeWorkspaceFile(scope, requested, after);
  return { before: file.text, after };
}

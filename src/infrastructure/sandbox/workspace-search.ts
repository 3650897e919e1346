import { lstat, open, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../../domain/errors.ts';
import type { PathScope } from './path-scope.ts';
import { decodeText } from './workspace-files.ts';

/** Folders no tool walks into: build output, dependencies, git internals. */
const SKIPPED_DIRS = new Set(['.git', 'target', 'node_modules']);
const MAX_LIST_ENTRIES = 500;
const MAX_LIST_DEPTH = 4;
const MAX_MATCHES = 200;
const MAX_SEARCH_FILE_BYTES = 1024 * 1024;
const MAX_SEARCH_FILES = 5000;
const MAX_LINE_CHARS = 240;

/**
 * Lists a workspace folder recursively to a bounded depth. Links are shown with their target and
 * never followed; build output and git internals are named but not entered.
 */
export async function listWorkspace(scope: PathScope, requested: string): Promise<string> {
  const start = await scope.forRead(requested);
  if (!(await lstat(start.absolute)).isDirectory()) return start.relative;
  const lines: string[] = [];
  let more = false;
  const walk = async (dir: string, depth: number): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      if (lines.length >= MAX_LIST_ENTRIES) {
        more = true;
        return;
      }
      const absolute = path.join(dir, name);
      const relative = path.relative(scope.root, absolute);
      const info = await lstat(absolute);
      if (scope.recordPathOf(absolute) !== undefined) {
        lines.push(
          `${relative}${info.isDirectory() ? '/' : ''} (the fabric's run record, not open to tools)`,
        );
      } else if (info.isSymbolicLink())
        lines.push(`${relative} -> ${await readlink(absolute)} (link, not followed)`);
      else if (info.isDirectory()) {
        const skipped = SKIPPED_DIRS.has(name);
        lines.push(`${relative}/${skipped ? ' (not listed)' : ''}`);
        if (!skipped && depth < MAX_LIST_DEPTH) await walk(absolute, depth + 1);
      } else lines.push(`${relative} (${info.size} bytes)`);
    }
  };
  await walk(start.absolute, 1);
  if (lines.length === 0) return `${start.relative}/ is empty.`;
  if (more) lines.push(`… more entries not shown (limit ${MAX_LIST_ENTRIES}); list a subfolder.`);
  return lines.join('\n');
}

/**
 * Searches text files of the workspace for a regular expression (or the literal text when the
 * pattern is not a valid or not a safe expression) and answers `file:line:text`, bounded.
 */
export async function searchWorkspace(scope: PathScope, pattern: string, requested: string): Promise<string> {
  if (pattern === '') throw new ToolError('pattern is empty; give text or a regular expression to look for.');
  const matcher = compile(pattern);
  const start = await scope.forRead(requested);
  const results: string[] = [];
  let files = 0;
  let more = false;
  const searchFile = async (absolute: string): Promise<void> => {
    const info = await lstat(absolute);
    if (!info.isFile() || info.size > MAX_SEARCH_FILE_BYTES) return;
    files++;
    const handle = await open(absolute, 'r');
    let content: Buffer;
    try {
      content = await handle.readFile();
    } finally {
      await handle.close();
    }
    const decoded = decodeText(content);
    if (decoded.kind === 'binary') return;
    const relative = path.relative(scope.root, absolute);
    const lines = decoded.text.split('\n');
    for (let index = 0; index < lines.length; index++) {
      const line = lines[index]!.slice(0, 2000);
      if (!matcher(line)) continue;
      if (results.length >= MAX_MATCHES) {
        more = true;
        return;
      }
      const shown = line.trim();
      results.push(
        `${relative}:${index + 1}:${shown.length > MAX_LINE_CHARS ? `${shown.slice(0, MAX_LINE_CHARS)}…` : shown}`,
      );
    }
  };
  const walk = async (dir: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      if (more || files >= MAX_SEARCH_FILES) return;
      const absolute = path.join(dir, name);
      if (scope.recordPathOf(absolute) !== undefined) continue;
      const info = await lstat(absolute);
      if (info.isDirectory() && !SKIPPED_DIRS.has(name)) await walk(absolute);
      else if (info.isFile()) await searchFile(absolute);
    }
  };
  if ((await lstat(start.absolute)).isDirectory()) await walk(start.absolute);
  else await searchFile(start.absolute);
  if (results.length === 0) return `No match for ${JSON.stringify(pattern)} in ${start.relative}.`;
  if (more) results.push(`… more matches not shown (limit ${MAX_MATCHES}); narrow the pattern or the path.`);
  return results.join('\n');
}

/**
 * A line matcher. Nested quantifiers such as `(a+)+` can take exponential time in a
 * backtracking engine, so such patterns are searched as literal text instead.
 */
function compile(pattern: string): (line: string) => boolean {
  const risky = /\([^)]*[+*}][^)]*\)\s*[+*{]/.test(pattern) || pattern.length > 500;
  if (!risky) {
    try {
      const regex = new RegExp(pattern);
      return (line) => regex.test(line);
    } catch {
      // Not a valid regular expression: search for the text itself.
    }
  }
  return (line) => line.includes(pattern);
}

/**
 * Line-based unified diffs of one file's change, for the runlog (`tool_result.diff`, SPEC §6):
 * Myers' O(ND) algorithm on the lines between the common prefix and suffix, so a small edit in
 * a large file costs little. Pure: no I/O.
 */

/** Diffs longer than this are cut at a line, and say so in a last `\` line. */
export const MAX_DIFF_CHARS = 64 * 1024;
/** Lines of unchanged context around each change. */
const CONTEXT = 3;
/** Beyond this many differing lines (after prefix and suffix), the middle is shown as replaced whole. */
const MAX_EDIT_DISTANCE = 2000;

/** How many lines a diff adds and removes. */
export interface DiffStat {
  readonly added: number;
  readonly removed: number;
  /** The diff was cut at `MAX_DIFF_CHARS`: the counts are of what it shows. */
  readonly cut: boolean;
}

type Op = { readonly kind: ' ' | '-' | '+'; readonly line: string };

/**
 * The unified diff of `before` (null: the file did not exist) to `after`, headed `a/<path>` and
 * `b/<path>`; the empty string when nothing changed.
 */
export function unifiedDiff(
  path: string,
  before: string | null,
  after: string,
  maxChars = MAX_DIFF_CHARS,
): string {
  if (before === after) return '';
  const a = splitLines(before ?? '');
  const b = splitLines(after);
  const ops = diffLines(a, b);
  const header = `--- ${before === null ? '/dev/null' : `a/${path}`}\n+++ b/${path}\n`;
  return bound(header + hunks(ops).join(''), maxChars);
}

/** Counts the `+` and `-` lines of a unified diff (its `---`/`+++` header excluded). */
export function diffStat(diff: string): DiffStat {
  let added = 0;
  let removed = 0;
  let cut = false;
  let inHunk = false;
  for (const line of diff.split('\n')) {
    if (line.startsWith('@@')) inHunk = true;
    else if (!inHunk) continue;
    else if (line.startsWith('+')) added++;
    else if (line.startsWith('-')) removed++;
    else if (line.startsWith('\\ diff cut')) cut = true;
  }
  return { added, removed, cut };
}

/** Lines without their terminators; a final line without `\n` is marked so the diff can say so. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  else lines[lines.length - 1] = `${lines[lines.length - 1]}\n\\ No newline at end of file`;
  return lines;
}

function diffLines(a: readonly string[], b: readonly string[]): Op[] {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  const same = (lines: readonly string[]): Op[] => lines.map((line) => ({ kind: ' ', line }));
  return [
    ...same(a.slice(0, start)),
    ...myers(a.slice(start, endA), b.slice(start, endB)),
    ...same(a.slice(endA)),
  ];
}

/** Myers' shortest edit script, keeping only the diagonals in reach at each distance. */
function myers(a: readonly string[], b: readonly string[]): Op[] {
  const n = a.length;
  const m = b.length;
  const replaceAll = (): Op[] => [
    ...a.map((line) => ({ kind: '-' as const, line })),
    ...b.map((line) => ({ kind: '+' as const, line })),
  ];
  if (n === 0 || m === 0) return replaceAll();
  const max = Math.min(n + m, MAX_EDIT_DISTANCE);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      const down = k === -d || (k !== d && (v[offset + k - 1] ?? 0) < (v[offset + k + 1] ?? 0));
      let x = down ? (v[offset + k + 1] ?? 0) : (v[offset + k - 1] ?? 0) + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
  }
  return replaceAll();
}

function backtrack(
  a: readonly string[],
  b: readonly string[],
  trace: readonly Int32Array[],
  last: number,
): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = last; d > 0; d--) {
    // trace[d] holds v[-d-1 .. d+1] as it was before step d.
    const v = trace[d] as Int32Array;
    const at = (k: number) => v[k + d + 1] ?? 0;
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      y--;
      ops.push({ kind: ' ', line: a[--x] as string });
    }
    if (down) ops.push({ kind: '+', line: b[--y] as string });
    else ops.push({ kind: '-', line: a[--x] as string });
  }
  while (x > 0 && y > 0) {
    y--;
    ops.push({ kind: ' ', line: a[--x] as string });
  }
  return ops.reverse();
}

/** Groups the edit script into hunks with `CONTEXT` lines around each change. */
function hunks(ops: readonly Op[]): string[] {
  const out: string[] = [];
  let i = 0;
  // Line numbers (1-based) in a and b before ops[i].
  const lineA: number[] = [];
  const lineB: number[] = [];
  let la = 1;
  let lb = 1;
  for (const op of ops) {
    lineA.push(la);
    lineB.push(lb);
    if (op.kind !== '+') la++;
    if (op.kind !== '-') lb++;
  }
  while (i < ops.length) {
    if (ops[i]?.kind === ' ') {
      i++;
      continue;
    }
    const from = Math.max(0, i - CONTEXT);
    let to = i;
    // Extend over changes whose gaps of context are short enough to share a hunk.
    for (let j = i; j < ops.length; j++) {
      if (ops[j]?.kind !== ' ') to = j;
      else if (j - to > 2 * CONTEXT) break;
    }
    const end = Math.min(ops.length, to + CONTEXT + 1);
    const slice = ops.slice(from, end);
    const countA = slice.filter((op) => op.kind !== '+').length;
    const countB = slice.filter((op) => op.kind !== '-').length;
    const startA = countA === 0 ? (lineA[from] ?? 1) - 1 : (lineA[from] ?? 1);
    const startB = countB === 0 ? (lineB[from] ?? 1) - 1 : (lineB[from] ?? 1);
    out.push(`@@ -${range(startA, countA)} +${range(startB, countB)} @@\n`);
    for (const op of slice) out.push(`${op.kind}${op.line}\n`);
    i = end;
  }
  return out;
}

function range(start: number, count: number): string {
  return count === 1 ? `${start}` : `${start},${count}`;
}

function bound(diff: string, maxChars: number): string {
  if (diff.length <= maxChars) return diff;
  const cutAt = diff.lastIndexOf('\n', maxChars) + 1;
  const kept = diff.slice(0, cutAt);
  const omitted = diff.slice(cutAt).split('\n').length - 1;
  return `${kept}\\ diff cut at ${maxChars} characters: ${omitted} more lines not shown\n`;
}

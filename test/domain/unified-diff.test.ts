import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diffStat, unifiedDiff } from '../../src/domain/unified-diff.ts';

/** Applies a diff with GNU patch, the way a reviewer would, and returns the patched text. */
function applyWithPatch(before: string, diff: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fabric-diff-'));
  writeFileSync(join(dir, 'file.txt'), before);
  writeFileSync(join(dir, 'change.diff'), diff);
  execFileSync('patch', ['-s', '-p1', '-i', 'change.diff'], { cwd: dir });
  return execFileSync('cat', ['file.txt'], { cwd: dir, encoding: 'utf8' });
}

describe('unifiedDiff', () => {
  it('shows a one-line edit with three lines of context and the line numbers', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\n';
    const after = 'a\nb\nc\nd\nE\nf\ng\nh\n';
    expect(unifiedDiff('x.txt', before, after)).toBe(
      '--- a/x.txt\n+++ b/x.txt\n@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n',
    );
  });

  it('shows a new file against /dev/null', () => {
    expect(unifiedDiff('src/new.rs', null, 'fn main() {}\n')).toBe(
      '--- /dev/null\n+++ b/src/new.rs\n@@ -0,0 +1 @@\n+fn main() {}\n',
    );
  });

  it('is empty when nothing changed', () => {
    expect(unifiedDiff('x', 'same\n', 'same\n')).toBe('');
  });

  it('says when the last line has no newline', () => {
    expect(unifiedDiff('x', 'a\nb', 'a\nc')).toContain('-b\n\\ No newline at end of file\n+c\n');
  });

  it('produces diffs that patch applies, for scattered edits, insertions and deletions', () => {
    const before = `${Array.from({ length: 200 }, (_, i) => `line ${i}`).join('\n')}\n`;
    const lines = before.split('\n');
    lines.splice(150, 3, 'replaced 150', 'added');
    lines.splice(80, 0, 'inserted at 80');
    lines.splice(10, 2);
    lines[0] = 'first changed';
    const after = lines.join('\n');
    const diff = unifiedDiff('file.txt', before, after);
    expect(applyWithPatch(before, diff)).toBe(after);
    expect(diffStat(diff)).toEqual({ added: 4, removed: 6, cut: false });
  });

  it('round-trips through patch for random edits of a small alphabet (many equal lines)', () => {
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let round = 0; round < 20; round++) {
      const before = `${Array.from({ length: 30 + next(30) }, () => 'abc'[next(3)]).join('\n')}\n`;
      const lines = before.split('\n');
      for (let edit = 0; edit < 6; edit++) {
        const at = next(lines.length - 1);
        if (next(2) === 0) lines.splice(at, 1 + next(3));
        else lines.splice(at, 0, 'xyz'[next(3)] as string);
      }
      const after = lines.join('\n');
      expect(applyWithPatch(before, unifiedDiff('file.txt', before, after))).toBe(after);
    }
  });

  it('keeps separate hunks apart when the changes are far from each other', () => {
    const before = `${Array.from({ length: 40 }, (_, i) => `${i}`).join('\n')}\n`;
    const after = before.replace('\n5\n', '\nfive\n').replace('\n30\n', '\nthirty\n');
    expect(unifiedDiff('f', before, after).match(/^@@/gm)).toHaveLength(2);
  });

  it('cuts a long diff at a line and says how many lines were left out', () => {
    const after = `${Array.from({ length: 1000 }, (_, i) => `row ${i}`).join('\n')}\n`;
    const diff = unifiedDiff('big.txt', null, after, 200);
    expect(diff.length).toBeLessThan(300);
    expect(diff).toMatch(/\n\\ diff cut at 200 characters: \d+ more lines not shown\n$/);
    expect(diffStat(diff).cut).toBe(true);
  });
});

describe('diffStat', () => {
  it('counts added and removed lines but not the file headers', () => {
    const diff = unifiedDiff('a', '--- x\n+++ y\nkeep\n', '+++ y\nkeep\nmore\n');
    expect(diffStat(diff)).toEqual({ added: 1, removed: 1, cut: false });
  });
});

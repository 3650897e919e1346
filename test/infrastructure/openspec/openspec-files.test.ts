import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenSpecFiles } from '../../../src/infrastructure/openspec/openspec-files.ts';
import { parseTasks } from '../../../src/infrastructure/openspec/parse-tasks.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const TASKS = `# Tasks

## 1. Geometry
- [x] 1.1 Add Rect::area
- [ ] 1.2 Add Rect::contains_point
  - Acceptance: points on the left and top edges are inside
    - nested detail
  - [ ] a nested checkbox is a detail, not a task

  - Test plan: cargo test rect

## 2. Damage
* [ ] 2.1 Clear damage after a frame
- [X] 2.2 Done with a capital X
Some prose that is not a task.
- [ ] Unnumbered item
`;

async function repoWith(files: Record<string, string | Buffer>): Promise<string> {
  const repo = await tempDir('openspec-');
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(repo, path, '..'), { recursive: true });
    await writeFile(join(repo, path), content);
  }
  return repo;
}

describe('parseTasks', () => {
  it('reads sections, ids, text, done boxes and indented details in document order', () => {
    const tasks = parseTasks(TASKS, 'tasks.md');
    expect(tasks.map((t) => [t.id, t.text, t.done, t.section])).toEqual([
      ['1.1', 'Add Rect::area', true, '1. Geometry'],
      ['1.2', 'Add Rect::contains_point', false, '1. Geometry'],
      ['2.1', 'Clear damage after a frame', false, '2. Damage'],
      ['2.2', 'Done with a capital X', true, '2. Damage'],
      ['2#3', 'Unnumbered item', false, '2. Damage'],
    ]);
    expect(tasks[1]!.details).toEqual([
      '- Acceptance: points on the left and top edges are inside',
      '  - nested detail',
      '- [ ] a nested checkbox is a detail, not a task',
      '',
      '- Test plan: cargo test rect',
    ]);
    expect(tasks[1]!.line).toBe(5);
  });

  it('reads a CRLF file the same as an LF one', () => {
    const crlf = parseTasks(TASKS.replaceAll('\n', '\r\n'), 'tasks.md');
    expect(crlf).toEqual(parseTasks(TASKS, 'tasks.md'));
  });

  it('names the file and line of a checkbox it cannot read', () => {
    expect(() => parseTasks('## 1. A\n- [ ] 1.1 ok\n- [-] 1.2 what\n', 'c/tasks.md')).toThrow(
      /c\/tasks\.md:3: cannot read the checkbox/,
    );
    expect(() => parseTasks('-[ ] 1.1 squashed\n', 'c/tasks.md')).toThrow(/c\/tasks\.md:1:/);
  });

  it('refuses a task with no text, naming its id and line', () => {
    expect(() => parseTasks('## 1. A\n- [ ] 1.1 fine\n- [ ] 1.2\n', 'tasks.md')).toThrow(
      /tasks\.md:3: task 1\.2 has no text/,
    );
  });

  it('refuses a duplicate id, naming both lines', () => {
    expect(() => parseTasks('- [ ] 1.1 a\n- [ ] 1.1 b\n', 'tasks.md')).toThrow(
      /tasks\.md:2: .*first on line 1/,
    );
  });

  it('refuses a file that is not a checklist', () => {
    expect(() => parseTasks('# Tasks\n\nJust prose.\n', 'x/tasks.md')).toThrow(
      /x\/tasks\.md: no tasks found/,
    );
    expect(() => parseTasks('', 'x/tasks.md')).toThrow(/no tasks found/);
  });
});

describe('OpenSpecFiles', () => {
  it('reads changes in name order with proposal, design and spec deltas, ignoring the archive', async () => {
    const repo = await repoWith({
      'openspec/changes/b-second/proposal.md': '# B\n',
      'openspec/changes/b-second/tasks.md': '- [ ] 1.1 b task\n',
      'openspec/changes/a-first/proposal.md': '# Why\nBecause.\n',
      'openspec/changes/a-first/design.md': '# Design\n',
      'openspec/changes/a-first/specs/geometry/spec.md': '## ADDED Requirements\n',
      'openspec/changes/a-first/tasks.md': TASKS,
      'openspec/changes/archive/2025-old/tasks.md': '- [ ] 1.1 old\n',
    });
    const scan = await new OpenSpecFiles(repo).scan();
    expect(scan.unreadable).toEqual([]);
    expect(scan.changes.map((c) => c.id)).toEqual(['a-first', 'b-second']);
    const first = scan.changes[0]!;
    expect(first.proposal).toBe('# Why\nBecause.\n');
    expect(first.design).toBe('# Design\n');
    expect(first.specs).toEqual([{ capability: 'geometry', text: '## ADDED Requirements\n' }]);
    expect(scan.changes[1]!.design).toBeNull();
  });

  it('reports a change it cannot read by name and goes on with the others', async () => {
    const repo = await repoWith({
      'openspec/changes/broken/tasks.md': 'no checklist here\n',
      'openspec/changes/empty/proposal.md': '# Only a proposal\n',
      'openspec/changes/fine/tasks.md': '- [ ] 1.1 fine\n',
    });
    const scan = await new OpenSpecFiles(repo).scan();
    expect(scan.changes.map((c) => c.id)).toEqual(['fine']);
    expect(scan.unreadable.map((u) => u.id)).toEqual(['broken', 'empty']);
    expect(scan.unreadable[0]!.message).toMatch(/openspec\/changes\/broken\/tasks\.md: no tasks found/);
    expect(scan.unreadable[1]!.message).toMatch(/openspec\/changes\/empty\/tasks\.md: missing/);
  });

  it('says what is missing when the repository has no openspec/changes', async () => {
    const repo = await repoWith({ 'README.md': 'x' });
    await expect(new OpenSpecFiles(repo).scan()).rejects.toThrow(
      /needs openspec\/changes\/<change-id>\/tasks\.md/,
    );
  });

  it('ticks exactly one byte of a CRLF file with a BOM and non-ASCII text', async () => {
    const text = `\uFEFF# Tâches\r\n\r\n## 1. Géométrie\r\n- [ ] 1.1 Ajouter Rect::aire — vite\r\n  - détail\r\n- [ ] 1.2 Suite\r\n`;
    const repo = await repoWith({ 'openspec/changes/c/tasks.md': text });
    const files = new OpenSpecFiles(repo);
    const [change] = (await files.scan()).changes;
    await files.tick('c', change!.tasks[1]!);
    const after = await readFile(join(repo, 'openspec/changes/c/tasks.md'));
    const before = Buffer.from(text, 'utf8');
    const differing = [...before.keys()].filter((i) => before[i] !== after[i]);
    expect(after.length).toBe(before.length);
    expect(differing).toHaveLength(1);
    expect(after.toString('utf8')).toBe(text.replace('- [ ] 1.2', '- [x] 1.2'));
    const rescanned = (await files.scan()).changes[0]!;
    expect(rescanned.tasks.map((t) => t.done)).toEqual([false, true]);
  });

  it('refuses to tick a line that is no longer the task', async () => {
    const repo = await repoWith({ 'openspec/changes/c/tasks.md': '- [ ] 1.1 first\n- [ ] 1.2 second\n' });
    const files = new OpenSpecFiles(repo);
    const [change] = (await files.scan()).changes;
    await writeFile(
      join(repo, 'openspec/changes/c/tasks.md'),
      '- [ ] 1.0 inserted\n- [ ] 1.1 first\n- [ ] 1.2 second\n',
    );
    await expect(files.tick('c', change!.tasks[1]!)).rejects.toThrow(
      /tasks\.md:2: the line is no longer task 1\.2/,
    );
  });
});

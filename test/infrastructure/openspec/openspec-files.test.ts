import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { OpenSpecFiles } from '../../../src/infrastructure/openspec/openspec-files.ts';
import { parseTasks } from '../../../src/infrastructure/openspec/parse-tasks.ts';
import { workOrder } from '../../../src/application/daemon/openspec.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const TASKS = `# Tasks

## 1. Geometry
- [x] 1.1 Add Rect::area
- [ ] 1.2 Add Rect::contains_point
  - Acceptance: points on the left and top edges are inside
    - nested detail
  - [ ] a nested checkbox is a task of its own

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
  it('reads sections, ids, text, done boxes, nested tasks and indented details in document order', () => {
    const tasks = parseTasks(TASKS, 'tasks.md');
    expect(tasks.map((t) => [t.id, t.text, t.done, t.section, t.parent])).toEqual([
      ['1.1', 'Add Rect::area', true, '1. Geometry', null],
      ['1.2', 'Add Rect::contains_point', false, '1. Geometry', null],
      ['1#3', 'a nested checkbox is a task of its own', false, '1. Geometry', '1.2'],
      ['2.1', 'Clear damage after a frame', false, '2. Damage', null],
      ['2.2', 'Done with a capital X', true, '2. Damage', null],
      ['2#3', 'Unnumbered item', false, '2. Damage', null],
    ]);
    expect(tasks[1]!.details).toEqual([
      '- Acceptance: points on the left and top edges are inside',
      '  - nested detail',
      '- Test plan: cargo test rect',
    ]);
    expect(tasks[2]!.details).toEqual([]);
    expect(tasks[1]!.line).toBe(5);
  });

  it('reads a CRLF file the same as an LF one', () => {
    const crlf = parseTasks(TASKS.replaceAll('\n', '\r\n'), 'tasks.md');
    expect(crlf).toEqual(parseTasks(TASKS, 'tasks.md'));
  });

  // Each form with what OpenSpec 1.13 counts for it (countTasksFromContent: total, completed).
  const FORMS: [string, string, { total: number; done: number }][] = [
    ['dash, star, plus bullets', '- [ ] 1.1 a\n* [x] 1.2 b\n+ [X] 1.3 c\n', { total: 3, done: 2 }],
    ['ordered lists', '1. [ ] Run the unit test\n2) [x] Run the lint\n10. [ ] Ten\n', { total: 3, done: 1 }],
    ['padded done mark', '- [ x] 1.1 padded\n- [ x ] 1.2 both sides\n', { total: 2, done: 2 }],
    [
      'other marks are open',
      '- [~] 1.1 partly\n- [-] 1.2 dropped\n- [] 1.3 empty box\n',
      { total: 3, done: 0 },
    ],
    ['no space before the box, none after it', '-[ ] 1.1 squashed\n- [x]1.2 glued\n', { total: 2, done: 1 }],
    ['empty done box', '- [ ] 1.1 a\n- [x]\n', { total: 2, done: 1 }],
    [
      'links and long labels are not tasks',
      '- [ ] 1.1 a\n- [Doc](./doc.md)\n- [1](./one)\n- [WIP] later\n',
      { total: 1, done: 0 },
    ],
    ['boxes in a fence count', '- [ ] 1.1 a\n```\n- [ ] 9.9 example\n```\n', { total: 2, done: 0 }],
    [
      'nested boxes',
      '- [ ] 1.1 Write the module\n  - [ ] 1.1.1 Add the type\n    - [x] 1.1.1.1 Name it\n',
      { total: 3, done: 1 },
    ],
    [
      'unnumbered sections',
      '## Backend\n- [ ] Add the endpoint\n## Frontend\n- [ ] Add the button\n',
      { total: 2, done: 0 },
    ],
    ['bold ids', '## Phase 1: Setup\n- [ ] **1.1** Create\n- [x] **1.2** Wire\n', { total: 2, done: 1 }],
  ];
  it.each(FORMS)('counts %s as OpenSpec counts them', (_name, text, expected) => {
    const tasks = parseTasks(text, 'tasks.md');
    expect({ total: tasks.length, done: tasks.filter((t) => t.done).length }).toEqual(expected);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
  });

  it('gives unnumbered and repeated tasks ids that cannot collide', () => {
    const text =
      '## Backend\n- [ ] Add the endpoint\n## Frontend\n- [ ] Add the button\n' +
      '## 3. Numbered\n- [ ] 3.1 one\n- [ ] 3.1 again\n- [ ] **3.3** bold\n1. [ ] ordered\n';
    expect(parseTasks(text, 'tasks.md').map((t) => [t.id, t.text])).toEqual([
      ['s1#1', 'Add the endpoint'],
      ['s2#1', 'Add the button'],
      ['3.1', 'one'],
      ['3.1@7', 'again'],
      ['3.3', 'bold'],
      ['3#4', 'ordered'],
    ]);
  });

  it('names the file and line of an open task it cannot place (no text, no sub-tasks)', () => {
    expect(() => parseTasks('## 1. A\n- [ ] 1.1 fine\n- [ ] 1.2\n', 'tasks.md')).toThrow(
      /tasks\.md:3: task 1\.2 has no text/,
    );
    expect(() => parseTasks('- [ ] 1.1 fine\n- [ ]\n', 'c/tasks.md')).toThrow(
      /c\/tasks\.md:2: task #2 has no text/,
    );
    // With sub-tasks, an empty box is their parent.
    expect(parseTasks('- [ ]\n  - [ ] 1.1 child\n', 'tasks.md').map((t) => [t.id, t.parent])).toEqual([
      ['#1', null],
      ['1.1', '#1'],
    ]);
  });

  it('refuses a file that is not a checklist', () => {
    expect(() => parseTasks('# Tasks\n\nJust prose.\n', 'x/tasks.md')).toThrow(
      /x\/tasks\.md: no tasks found/,
    );
    expect(() => parseTasks('', 'x/tasks.md')).toThrow(/no tasks found/);
  });
});

describe('workOrder', () => {
  it('puts sub-tasks before the task they sit under, the rest in document order', () => {
    const text = '- [ ] 1 top\n  - [ ] 1.1 a\n    - [ ] 1.1.1 deep\n  - [ ] 1.2 b\n- [ ] 2 next\n';
    expect(workOrder(parseTasks(text, 'tasks.md')).map((t) => t.id)).toEqual([
      '1.1.1',
      '1.1',
      '1.2',
      '1',
      '2',
    ]);
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

  it('ticks each kind of open box on its mark, and leaves a box the run ticked as it is', async () => {
    const text =
      '## 1. Forms\n1. [ ] 1.1 ordered\n- [~] 1.2 tilde\n- [] 1.3 empty\n-[ ] 1.4 squashed\n- [x] 1.5 done\n' +
      '- [ ] 1.6 parent\n  - [-] 1.6.1 child\n## Backend\n- [  ]   Add the endpoint\n';
    const repo = await repoWith({ 'openspec/changes/c/tasks.md': text });
    const files = new OpenSpecFiles(repo);
    const tasks = (await files.scan()).changes[0]!.tasks;
    for (const task of tasks) await files.tick('c', task);
    const after = await readFile(join(repo, 'openspec/changes/c/tasks.md'), 'utf8');
    expect(after).toBe(
      '## 1. Forms\n1. [x] 1.1 ordered\n- [x] 1.2 tilde\n- [x] 1.3 empty\n-[x] 1.4 squashed\n- [x] 1.5 done\n' +
        '- [x] 1.6 parent\n  - [x] 1.6.1 child\n## Backend\n- [x ]   Add the endpoint\n',
    );
    expect((await files.scan()).changes[0]!.tasks.every((t) => t.done)).toBe(true);
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

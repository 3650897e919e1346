import { FabricError } from '../../domain/errors.ts';
import type { OpenSpecTask } from '../../application/daemon/openspec.ts';

/**
 * A task line exactly as OpenSpec 1.13 reads one (`TASK_LINE_PATTERN` in its
 * `dist/utils/task-progress.js`): any list line (`-`, `*`, `+`, `1.`, `1)`) with a checkbox that
 * holds at most one mark (`[ ]`, `[x]`, `[X]`, `[ x]`, `[~]`, `[-]`, `[]`), not a link. Only x/X
 * is done. Groups: indent, mark, description.
 */
const TASK_LINE = /^(\s*)(?:[-*+]|\d{1,9}[.)])\s*\[(?:\s*([^\]\s]?)\s*\](?![([])|\s+\])\s*(.*)/;
const SECTION = /^##[ \t]+(.+?)[ \t]*#*[ \t]*$/;
/** `1.2 text`, `1.2. text`, `1.2: text`, `**1.2** text`: the id, then the text. */
const TASK_ID = /^(\*\*|__)?(\d+(?:\.\d+)*)\.?\1?:?(?:\s+|$)/;

/** A line of a file and where its text starts, so a tick can change one character in place. */
interface Line {
  readonly text: string;
  readonly offset: number;
}

/** Splits text into lines, keeping each line's offset; `\r\n` and `\n` both end a line. */
export function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  let offset = 0;
  for (const raw of text.split('\n')) {
    const bom = offset === 0 && raw.startsWith('\uFEFF') ? 1 : 0;
    lines.push({ text: (raw.endsWith('\r') ? raw.slice(0, -1) : raw).slice(bom), offset: offset + bom });
    offset += raw.length + 1;
  }
  return lines;
}

type Parsed = OpenSpecTask & { details: string[]; children: number; indent: number };

/**
 * Reads OpenSpec's checklist as OpenSpec itself counts it: every task line is a task, wherever
 * it sits (nested under another task, in an ordered list, in a fence), numbered or not. Ids are
 * the number written (`1.2`, `**1.2**`); a task without one, or whose number an earlier task
 * took, gets one that cannot collide (`<section>#<n>`, `…@<line>`). Non-task lines indented under
 * a task are its details. Loud (a `usage` error naming file and line) only about what the daemon
 * cannot place: an open task with neither text nor sub-tasks, or a file with no task at all.
 */
export function parseTasks(text: string, file: string): OpenSpecTask[] {
  const tasks: Parsed[] = [];
  const taken = new Set<string>();
  let section: string | null = null;
  let sectionKey = '';
  let headings = 0;
  let inSection = 0;
  /** The tasks the next lines may sit under, outermost first. */
  let open: Parsed[] = [];
  splitLines(text).forEach((line, index) => {
    const number = index + 1;
    const indent = line.text.length - line.text.trimStart().length;
    if (line.text.trim() === '') {
      const last = open.at(-1);
      if (last && last.details.length > 0) last.details.push('');
      return;
    }
    const heading = SECTION.exec(line.text);
    if (heading) {
      section = heading[1]!;
      headings += 1;
      sectionKey = /^(\d+)\./.exec(section)?.[1] ?? `s${headings}`;
      inSection = 0;
      open = [];
      return;
    }
    while (open.length > 0 && open.at(-1)!.indent >= indent) open.pop();
    const item = TASK_LINE.exec(line.text);
    if (!item) {
      // Deeper than a task's bullet: a detail of that task; anything else is prose.
      if (open.length > 0) open.at(-1)!.details.push(line.text);
      else open = [];
      return;
    }
    const description = item[3]!.trim();
    const idMatch = TASK_ID.exec(description);
    inSection += 1;
    let id = idMatch ? idMatch[2]! : `${sectionKey}#${inSection}`;
    if (taken.has(id)) id = `${id}@${number}`;
    taken.add(id);
    const parent = open.at(-1) ?? null;
    const task: Parsed = {
      id,
      text: (idMatch ? description.slice(idMatch[0].length) : description).trim(),
      done: (item[2] ?? '').toLowerCase() === 'x',
      details: [],
      section,
      line: number,
      parent: parent?.id ?? null,
      children: 0,
      indent,
    };
    if (parent) parent.children += 1;
    tasks.push(task);
    open.push(task);
  });
  if (tasks.length === 0) {
    throw new FabricError(
      'usage',
      `${file}: no tasks found: tasks.md must be a checklist of "- [ ] 1.1 text" items under "## 1. Section" headings.`,
    );
  }
  for (const task of tasks) {
    if (!task.done && task.text === '' && task.children === 0) {
      throw unreadable(file, task.line, `task ${task.id} has no text; say what is to be done after the id`);
    }
  }
  return tasks.map(({ children: _c, indent: _i, ...task }) => ({
    ...task,
    details: trimDetails(task.details),
  }));
}

/** What ticking a task changes: the characters `[start, end)` of the file's text become `x`. */
export interface BoxEdit {
  readonly start: number;
  readonly end: number;
  /** The box holds x or X already: nothing to change. */
  readonly ticked: boolean;
}

/**
 * Where a task's box is in the file: its mark (`~`, `-`) or first blank becomes `x`, and an
 * empty `[]` gets one. Throws when the line is no longer that task.
 */
export function boxEdit(
  text: string,
  task: Pick<OpenSpecTask, 'id' | 'text' | 'line'>,
  file: string,
): BoxEdit {
  const line = splitLines(text)[task.line - 1];
  const item = line === undefined ? null : TASK_LINE.exec(line.text);
  if (line === undefined || item === null || !item[3]!.includes(task.text)) {
    throw unreadable(
      file,
      task.line,
      `the line is no longer task ${task.id} ("${task.text}"); the file changed while the daemon ran`,
    );
  }
  const open = line.text.indexOf('[', item[1]!.length);
  const close = line.text.indexOf(']', open);
  const inside = line.text.slice(open + 1, close);
  const mark = item[2] ?? '';
  const start = line.offset + open + 1;
  if (mark.toLowerCase() === 'x') return { start, end: start, ticked: true };
  if (inside === '') return { start, end: start, ticked: false };
  const at = mark === '' ? inside.search(/\s/) : inside.indexOf(mark);
  return { start: start + at, end: start + at + inside[at]!.length, ticked: false };
}

/** Details without trailing blank lines, and without the indentation they share. */
function trimDetails(details: readonly string[]): string[] {
  const kept = [...details];
  while (kept.length > 0 && kept[kept.length - 1] === '') kept.pop();
  const indents = kept.filter((d) => d !== '').map((d) => d.length - d.trimStart().length);
  const common = indents.length === 0 ? 0 : Math.min(...indents);
  return kept.map((d) => d.slice(common).trimEnd());
}

function unreadable(file: string, line: number, what: string): FabricError {
  return new FabricError('usage', `${file}:${line}: ${what}.`, { details: { file, line } });
}

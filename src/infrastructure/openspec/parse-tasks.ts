import { FabricError } from '../../domain/errors.ts';
import type { OpenSpecTask } from '../../application/daemon/openspec.ts';

/** `- [ ] 1.2 text` (also `*` and `+` bullets, `[x]` and `[X]`). Groups: indent, mark, rest. */
const ITEM = /^([ \t]*)[-*+][ \t]+\[([ xX])\](?:[ \t]+(.*?))?[ \t]*$/;
/** Anything that tries to be a checkbox item: caught when ITEM does not read it. */
const LOOKS_LIKE_ITEM = /^[ \t]*[-*+][ \t]*\[[^\]]{0,3}\]/;
const SECTION = /^##[ \t]+(.+?)[ \t]*#*[ \t]*$/;
const TASK_ID = /^(\d+(?:\.\d+)*)\.?(?:[ \t]+|$)/;

/** A line of a file and where its text starts, so a tick can change one byte in place. */
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

/**
 * Reads OpenSpec's checklist: `## N. Section` headings and `- [ ] N.M text` items, each with the
 * indented lines under it as details (nested bullets included). Tolerant of CRLF, blank lines
 * and prose; loud (a `usage` error naming file and line) about a checkbox it cannot read, an
 * item with no text, a duplicate id, or a file with no checklist at all.
 */
export function parseTasks(text: string, file: string): OpenSpecTask[] {
  const tasks: (OpenSpecTask & { details: string[] })[] = [];
  const seen = new Map<string, number>();
  let section: string | null = null;
  let inSection = 0;
  let current: { indent: number; details: string[] } | null = null;
  const lines = splitLines(text);
  lines.forEach((line, index) => {
    const number = index + 1;
    const indent = line.text.length - line.text.trimStart().length;
    if (line.text.trim() === '') {
      if (current && current.details.length > 0) current.details.push('');
      return;
    }
    // Deeper than the item's bullet: a detail of that item, whatever it is (a nested checkbox too).
    if (current && indent > current.indent) {
      current.details.push(line.text);
      return;
    }
    current = null;
    const heading = SECTION.exec(line.text);
    if (heading) {
      section = heading[1]!;
      inSection = 0;
      return;
    }
    const item = ITEM.exec(line.text);
    if (!item) {
      if (LOOKS_LIKE_ITEM.test(line.text)) {
        throw unreadable(
          file,
          number,
          `cannot read the checkbox in "${line.text.trim()}"; write "- [ ] 1.1 text" or "- [x] 1.1 text"`,
        );
      }
      return; // prose, a title, a table: not a task
    }
    const rest = item[3] ?? '';
    const idMatch = TASK_ID.exec(rest);
    const taskText = (idMatch ? rest.slice(idMatch[0].length) : rest).trim();
    inSection += 1;
    const id = idMatch ? idMatch[1]! : `${sectionNumber(section) ?? ''}#${inSection}`;
    if (taskText === '')
      throw unreadable(file, number, `task ${id} has no text; say what is to be done after the id`);
    const earlier = seen.get(id);
    if (earlier !== undefined)
      throw unreadable(
        file,
        number,
        `task id ${id} is used twice (first on line ${earlier}); give each task its own id`,
      );
    seen.set(id, number);
    const details: string[] = [];
    current = { indent: item[1]!.length, details };
    tasks.push({ id, text: taskText, done: item[2] !== ' ', details, section, line: number });
  });
  if (tasks.length === 0) {
    throw new FabricError(
      'usage',
      `${file}: no tasks found: tasks.md must be a checklist of "- [ ] 1.1 text" items under "## 1. Section" headings.`,
    );
  }
  return tasks.map((task) => ({ ...task, details: trimDetails(task.details) }));
}

/** Where a task's box is in the file: the byte to turn from a space into `x`. */
export function boxOffset(
  text: string,
  task: Pick<OpenSpecTask, 'id' | 'text' | 'line'>,
  file: string,
): number {
  const line = splitLines(text)[task.line - 1];
  const item = line === undefined ? null : ITEM.exec(line.text);
  if (line === undefined || item === null || !line.text.includes(task.text)) {
    throw unreadable(
      file,
      task.line,
      `the line is no longer task ${task.id} ("${task.text}"); the file changed while the daemon ran`,
    );
  }
  const bracket = line.text.indexOf('[', item[1]!.length);
  return line.offset + bracket + 1;
}

function sectionNumber(section: string | null): string | null {
  const match = section === null ? null : /^(\d+)\./.exec(section);
  return match ? match[1]! : null;
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

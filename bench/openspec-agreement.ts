/**
 * How the daemon's reading of tasks.md agrees with OpenSpec's own (SPEC §11): over a directory of
 * tasks.md files (any file whose name ends in `tasks.md`, at any depth), the tasks and done tasks
 * the daemon's parser counts against OpenSpec's `countTasksFromContent`, from the
 * `@fission-ai/openspec` package unpacked at OPENSPEC_DIR (`npm pack @fission-ai/openspec` and
 * untar it; default: node_modules/@fission-ai/openspec). Prints the files, boxes, files that
 * agree, and each file that does not, or that the daemon cannot read, with why.
 *
 *   node --import tsx bench/openspec-agreement.ts DIR [OPENSPEC_DIR]
 */
import { readdir, readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { errorMessage } from '../src/domain/errors.ts';
import { parseTasks } from '../src/infrastructure/openspec/parse-tasks.ts';

const [dir, openspecDir = 'node_modules/@fission-ai/openspec'] = process.argv.slice(2);
if (dir === undefined) throw new Error('usage: openspec-agreement.ts DIR [OPENSPEC_DIR]');
const progress = pathToFileURL(resolve(openspecDir, 'dist/utils/task-progress.js')).href;
const { countTasksFromContent } = (await import(progress)) as {
  countTasksFromContent(content: string): { total: number; completed: number };
};

const entries = await readdir(dir, { recursive: true, withFileTypes: true });
const files = entries
  .filter((e) => e.isFile() && e.name.endsWith('tasks.md'))
  .map((e) => join(e.parentPath, e.name))
  .sort();
let boxes = 0;
let agree = 0;
const problems: string[] = [];
for (const file of files) {
  const text = await readFile(file, 'utf8');
  const theirs = countTasksFromContent(text);
  boxes += theirs.total;
  let ours: { total: number; completed: number };
  try {
    const tasks = parseTasks(text, file);
    ours = { total: tasks.length, completed: tasks.filter((t) => t.done).length };
  } catch (error) {
    // OpenSpec's "No tasks" is the daemon's "no tasks found": both say there is no task.
    if (theirs.total === 0 && /no tasks found/.test(errorMessage(error))) {
      agree += 1;
      continue;
    }
    problems.push(
      `${file}: unreadable: ${errorMessage(error)} (OpenSpec: ${theirs.completed}/${theirs.total})`,
    );
    continue;
  }
  if (ours.total === theirs.total && ours.completed === theirs.completed) agree += 1;
  else
    problems.push(
      `${file}: daemon ${ours.completed}/${ours.total}, OpenSpec ${theirs.completed}/${theirs.total}`,
    );
}
console.log(JSON.stringify({ files: files.length, boxes, agree, differ: files.length - agree }));
for (const problem of problems) console.log(problem);

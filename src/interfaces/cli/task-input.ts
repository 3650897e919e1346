import { readFile, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { FabricError } from '../../domain/errors.ts';
import type { CliIo } from './io.ts';

/** The task of `fabric run`, and a note for stderr when the task looks like a path by mistake. */
export interface TaskInput {
  readonly task: string;
  readonly hint?: string;
}

/**
 * The task: `--task-file FILE`'s content, or with `-` alone standard input, or the arguments.
 * A task that is one word naming a file that exists is refused: the model would be given the
 * file's name, not what it says (issue 34, item 8). One that only looks like a path runs, with a
 * hint.
 */
export async function readTask(
  positionals: readonly string[],
  taskFile: string | undefined,
  io: CliIo,
): Promise<TaskInput> {
  if (taskFile !== undefined) {
    if (positionals.length > 0) {
      throw new FabricError(
        'usage',
        `fabric run takes the task once: --task-file ${taskFile} or TASK, not both (TASK was "${positionals.join(' ')}").`,
      );
    }
    const path = resolve(io.cwd, taskFile);
    const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'ENOENT'
          ? 'it does not exist'
          : error.code === 'EISDIR'
            ? 'it is a directory'
            : String(error.code ?? error);
      throw new FabricError(
        'usage',
        `--task-file ${taskFile}: cannot read ${path}: ${why}. Give the path of a text file holding the task.`,
        { cause: error },
      );
    });
    if (text.trim() === '') {
      throw new FabricError('usage', `--task-file ${taskFile}: ${path} is empty. Write the task in it.`);
    }
    return { task: text.trim() };
  }
  if (positionals.length === 1 && positionals[0] === '-')
    return { task: ((await io.readStdin?.()) ?? '').trim() };
  const task = positionals.join(' ').trim();
  if (!looksLikePath(task)) return { task };
  const path = resolve(io.cwd, task);
  const info = await stat(path).catch(() => undefined);
  if (info?.isFile() === true) {
    throw new FabricError(
      'usage',
      `The task "${task}" is the name of a file (${path}); the model would read only its name. To run the task it holds: fabric run … --task-file ${task}. To give the name as the task, add words to it.`,
    );
  }
  return {
    task,
    hint: `fabric run: the task "${task}" looks like a file path${info === undefined ? `, but there is no ${path}` : ''}; it runs as the task's text. For a task written in a file: --task-file FILE.`,
  };
}

/** One word with a slash or a file extension of text: `tasks/fix.md`, `TODO.txt`, `./task`. */
function looksLikePath(task: string): boolean {
  return !/\s/.test(task) && (task.includes('/') || /\.(md|txt|markdown|rst|org|ya?ml|json)$/i.test(task));
}

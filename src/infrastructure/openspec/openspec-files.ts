import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import type {
  OpenSpecChange,
  OpenSpecScan,
  OpenSpecSource,
  OpenSpecTask,
  SpecDelta,
  UnreadableChange,
} from '../../application/daemon/openspec.ts';
import { errorMessage, FabricError } from '../../domain/errors.ts';
import { boxEdit, parseTasks } from './parse-tasks.ts';

/** The OpenSpec port over a repository's `openspec/changes/` (SPEC §11). */
export class OpenSpecFiles implements OpenSpecSource {
  readonly #repo: string;
  readonly #changesDir: string;

  constructor(repo: string) {
    this.#repo = repo;
    this.#changesDir = join(repo, 'openspec', 'changes');
  }

  async scan(): Promise<OpenSpecScan> {
    const entries = await readdir(this.#changesDir, { withFileTypes: true }).catch((error: unknown) => {
      throw new FabricError(
        'usage',
        `${this.#changesDir}: cannot read the OpenSpec changes (${errorMessage(error)}). The repository needs openspec/changes/<change-id>/tasks.md.`,
        { cause: error },
      );
    });
    const ids = entries
      .filter((entry) => entry.isDirectory() && entry.name !== 'archive' && !entry.name.startsWith('.'))
      .map((entry) => entry.name)
      .sort();
    const changes: OpenSpecChange[] = [];
    const unreadable: UnreadableChange[] = [];
    for (const id of ids) {
      try {
        changes.push(await this.#readChange(id));
      } catch (error) {
        unreadable.push({ id, message: errorMessage(error) });
      }
    }
    return { changes, unreadable };
  }

  async tick(changeId: string, task: OpenSpecTask): Promise<void> {
    const path = this.#tasksPath(changeId);
    // Bytes, not text: the box's mark changes and nothing else does (CRLF, BOM, odd encodings kept).
    const bytes = await readFile(path);
    const text = bytes.toString('utf8');
    const edit = boxEdit(text, task, this.#shown(path));
    // Ticked already (the run ticked its own box): nothing to change.
    if (edit.ticked) return;
    const start = Buffer.byteLength(text.slice(0, edit.start), 'utf8');
    const end = Buffer.byteLength(text.slice(0, edit.end), 'utf8');
    await writeFile(path, Buffer.concat([bytes.subarray(0, start), Buffer.from('x'), bytes.subarray(end)]));
  }

  async #readChange(id: string): Promise<OpenSpecChange> {
    const dir = join(this.#changesDir, id);
    const tasksPath = this.#tasksPath(id);
    const tasksText = await readFile(tasksPath, 'utf8').catch((error: unknown) => {
      throw new FabricError(
        'usage',
        `${this.#shown(tasksPath)}: missing or unreadable (${errorMessage(error)}); a change needs a tasks.md checklist.`,
      );
    });
    const tasks = parseTasks(tasksText, this.#shown(tasksPath));
    return {
      id,
      tasksFile: relative(this.#repo, tasksPath).split(sep).join('/'),
      proposal: (await readOptional(join(dir, 'proposal.md'))) ?? '',
      design: await readOptional(join(dir, 'design.md')),
      specs: await readSpecs(join(dir, 'specs')),
      tasks,
    };
  }

  #tasksPath(changeId: string): string {
    return join(this.#changesDir, changeId, 'tasks.md');
  }

  #shown(path: string): string {
    return relative(this.#repo, path);
  }
}

async function readOptional(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return null;
  }
}

/** `specs/<capability>/spec.md`, at any depth, in path order. */
async function readSpecs(dir: string): Promise<SpecDelta[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => []);
  const files = entries
    .filter((entry) => entry.isFile() && entry.name === 'spec.md')
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const specs: SpecDelta[] = [];
  for (const file of files) {
    const text = await readOptional(file);
    if (text !== null)
      specs.push({ capability: relative(dir, file).split(sep).slice(0, -1).join('/'), text });
  }
  return specs;
}

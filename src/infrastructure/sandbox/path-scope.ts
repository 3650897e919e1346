import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { ToolError } from '../../domain/errors.ts';
import { isInside } from './is-inside.ts';
import { isProtectedPath, isUnreadablePath } from './protected-paths.ts';
import { RECORD_DESCRIPTIONS, type RecordPath, recordPathOf } from './record-paths.ts';
import { sandboxViolation } from './violation.ts';

/** Linux's PATH_MAX and NAME_MAX: anything longer is an attack or a mistake, never a real file. */
const MAX_PATH_LENGTH = 4096;
const MAX_NAME_LENGTH = 255;

/** A path the scope has checked: where it really is, and how the model should see it. */
export interface ScopedPath {
  /** The real absolute path (every existing symlink resolved). */
  readonly absolute: string;
  /** Relative to the workspace root, `.` for the root itself. */
  readonly relative: string;
  /** Path components below the deepest existing ancestor, which a write must create. */
  readonly missing: readonly string[];
}

export { isInside };

/**
 * Confines file tools to one workspace. Every path is resolved to its real location, symlinks
 * included (existing and dangling), and must stay below the root's real path.
 */
export class PathScope {
  readonly root: string;
  /** The run record inside the root (runs directory, config file): never read nor written. */
  readonly record: readonly RecordPath[];

  private constructor(root: string, record: readonly RecordPath[]) {
    this.root = root;
    this.record = record;
  }

  /**
   * Resolves the root's own real path once, so later checks compare real paths with real paths.
   * `record` lists protected paths below the root (see `recordPathsIn`), as real paths.
   */
  static async create(root: string, record: readonly RecordPath[] = []): Promise<PathScope> {
    return new PathScope(await realpath(root), record);
  }

  /** What protects `absolute` (a real path below the root), if anything does: for listings. */
  recordPathOf(absolute: string): RecordPath | undefined {
    return recordPathOf(this.record, absolute);
  }

  /** Resolves a path for reading: it must exist inside the root and not be a git internal. */
  async forRead(requested: string): Promise<ScopedPath> {
    const scoped = await this.resolve(requested, 'read');
    if (isUnreadablePath(scoped.relative)) {
      throw sandboxViolation(
        `${requested} is inside .git, which the file tools do not open (it can hold credentials).`,
        'protected_file',
        requested,
        scoped.absolute,
      );
    }
    return scoped;
  }

  /** Resolves a path for writing: inside the root, not through a link, not a toolchain or git file. */
  async forWrite(requested: string): Promise<ScopedPath> {
    const scoped = await this.resolve(requested, 'write');
    const lexical = path.relative(this.root, path.resolve(this.root, requested));
    if (isProtectedPath(scoped.relative) || isProtectedPath(lexical)) {
      throw sandboxViolation(
        `${requested} is a file the toolchain or git executes or trusts (.cargo/config*, rust-toolchain*, ` +
          '.git/*); the model may not write it. Ask the user to change it.',
        'protected_file',
        requested,
        scoped.absolute,
      );
    }
    return scoped;
  }

  private async resolve(requested: string, purpose: 'read' | 'write'): Promise<ScopedPath> {
    checkShape(requested);
    const lexical = path.resolve(this.root, requested === '' ? '.' : requested);
    if (!isInside(this.root, lexical)) {
      throw sandboxViolation(
        `${requested} is outside the workspace. Use a path relative to the workspace root (${this.root}).`,
        'outside_workspace',
        requested,
        lexical,
      );
    }
    // Find the deepest ancestor that exists (as a link or otherwise); the rest is to be created.
    const missing: string[] = [];
    let existing = lexical;
    while (!(await exists(existing))) {
      if (existing === this.root) throw new ToolError(`The workspace ${this.root} no longer exists.`);
      missing.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
    let real: string;
    try {
      real = await realpath(existing);
    } catch {
      // `existing` is a link whose target is missing: judge where it points, never follow it.
      const target = path.resolve(path.dirname(existing), await readlink(existing));
      if (!isInside(this.root, target)) {
        throw sandboxViolation(
          `${requested} goes through a symbolic link that points outside the workspace.`,
          'symlink_escape',
          requested,
          target,
        );
      }
      if (purpose === 'read') throw notFound(requested);
      throw sandboxViolation(
        `${requested} goes through a dangling symbolic link; write_file does not create files through links. ` +
          'Remove the link or write to its target path.',
        'dangling_symlink',
        requested,
        target,
      );
    }
    if (!isInside(this.root, real)) {
      throw sandboxViolation(
        `${requested} resolves through a symbolic link to a place outside the workspace.`,
        'symlink_escape',
        requested,
        real,
      );
    }
    const absolute = path.join(real, ...missing);
    // Before "not found": whether a protected path exists is not the model's business either.
    this.#refuseRecord(requested, absolute, lexical);
    if (purpose === 'read' && missing.length > 0) throw notFound(requested);
    return { absolute, relative: path.relative(this.root, absolute) || '.', missing };
  }

  /** Refuses the run record, by where the path really leads and by how it is spelled. */
  #refuseRecord(requested: string, absolute: string, lexical: string): void {
    const hit = recordPathOf(this.record, absolute) ?? recordPathOf(this.record, lexical);
    if (hit === undefined) return;
    const shown = path.relative(this.root, hit.absolute) || hit.absolute;
    throw sandboxViolation(
      `${requested} is inside ${shown}, ${RECORD_DESCRIPTIONS[hit.what]}. No tool may read or change it; ` +
        'work on the project files only.',
      hit.what === 'runs_dir' ? 'run_record' : 'protected_file',
      requested,
      absolute,
    );
  }
}

function checkShape(requested: string): void {
  if (requested.includes('\0')) {
    throw sandboxViolation('The path contains a NUL byte; send a plain path.', 'nul_byte', '<contains NUL>');
  }
  if (
    requested.length > MAX_PATH_LENGTH ||
    requested.split(/[\\/]/).some((part) => part.length > MAX_NAME_LENGTH)
  ) {
    throw sandboxViolation(
      `The path is too long (over ${MAX_PATH_LENGTH} characters or a name over ${MAX_NAME_LENGTH}).`,
      'path_too_long',
      `${requested.slice(0, 120)}… (${requested.length} characters)`,
    );
  }
}

async function exists(target: string): Promise<boolean> {
  try {
    await lstat(target);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    throw error;
  }
}

function notFound(requested: string): ToolError {
  return new ToolError(`${requested} does not exist in the workspace. Use list_files to see what does.`);
}

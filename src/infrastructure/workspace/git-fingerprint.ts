import { mkdir, stat } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import type { WorkspaceFingerprint } from '../../application/run/workspace-fingerprint.ts';
import { runGit } from '../git/run-git.ts';

/**
 * A workspace's fingerprint as git sees it (docs/adr/0013-resume-from-the-runlog.md): the tree id
 * of its tracked and untracked, not ignored files, taken with a git directory and index of the
 * run's own (`runs/<id>/fingerprint.git`). It works for any directory, a repository or not; the
 * workspace's own `.git` is never written (its objects are borrowed as alternates, so only changed
 * files are stored again); the index keeps stat data, so a step re-hashes only what changed.
 */
export class GitFingerprint implements WorkspaceFingerprint {
  readonly #workspace: string;
  readonly #gitDir: string;
  /** Pathspecs of the run record when it lies inside the workspace: never part of the fingerprint. */
  readonly #exclude: string[];
  #ready: Promise<Record<string, string> | null> | undefined;

  /**
   * @param workspace the workspace's directory
   * @param gitDir where the run keeps its git directory and index
   * @param record the runs directory (and the config file's): left out when inside the workspace
   */
  constructor(workspace: string, gitDir: string, record: readonly string[]) {
    this.#workspace = workspace;
    this.#gitDir = gitDir;
    this.#exclude = record
      .map((dir) => relative(workspace, dir))
      .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
      .map((rel) => `:(exclude)${rel}`);
  }

  async take(): Promise<string | null> {
    const env = await this.#env();
    if (env === null) return null;
    const add = await runGit(this.#workspace, ['add', '-A', '--', '.', ...this.#exclude], env);
    if (add.exitCode !== 0) return null;
    const tree = await runGit(this.#workspace, ['write-tree'], env);
    return tree.exitCode === 0 ? tree.stdout.trim() : null;
  }

  async changed(from: string, to: string): Promise<readonly string[]> {
    const env = await this.#env();
    if (env === null) return [];
    const diff = await runGit(this.#workspace, ['diff-tree', '-r', '--name-only', '-z', from, to], env);
    if (diff.exitCode !== 0) return [];
    return diff.stdout.split('\0').filter((path) => path !== '');
  }

  /** The environment that points git at the run's own directory and index, made once. */
  #env(): Promise<Record<string, string> | null> {
    this.#ready ??= this.#init();
    return this.#ready;
  }

  async #init(): Promise<Record<string, string> | null> {
    try {
      await mkdir(this.#gitDir, { recursive: true });
      const init = await runGit(this.#gitDir, ['init', '--bare', '-q', this.#gitDir]);
      if (init.exitCode !== 0) return null;
    } catch {
      // No git, or nowhere to write: the run goes on without fingerprints.
      return null;
    }
    const own = join(this.#workspace, '.git', 'objects');
    return {
      GIT_DIR: this.#gitDir,
      GIT_WORK_TREE: this.#workspace,
      GIT_INDEX_FILE: join(this.#gitDir, 'index'),
      ...((await isDirectory(own)) ? { GIT_ALTERNATE_OBJECT_DIRECTORIES: own } : {}),
    };
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

import { randomUUID } from 'node:crypto';
import { rm, stat } from 'node:fs/promises';
import { isAbsolute, relative } from 'node:path';
import type { ChangeSize, Repository } from '../../application/daemon/repository.ts';
import { FabricError } from '../../domain/errors.ts';
import { acquireLock } from './lock-file.ts';
import { git, runGit } from './run-git.ts';

/** Where the daemon keeps the edits of runs parked on an approval (SPEC §19), one ref per run. */
export const PARKED_REFS = 'refs/fabric/parked';

/** A ref the daemon made: it never reads, moves or deletes any other (a state file edited by hand). */
function parkedRef(ref: string): string {
  if (!/^refs\/fabric\/parked\/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(ref) || ref.includes('..'))
    throw new FabricError(
      'usage',
      `"${ref}" is not a ref the daemon set a parked run's edits aside under (refs/fabric/parked/<run>): the daemon's state file was changed by hand. Put that task's "parked" entry back, or delete its record from <runs_dir>/daemon/<repo>-<hash>/state.json (the task is then worked on afresh), and start the daemon again.`,
    );
  return ref;
}

/** The daemon's git port over a work tree, through git itself (argv, no shell). */
export class GitRepository implements Repository {
  readonly #root: string;
  /** Pathspecs of the run record (runs directory) when it lies inside the tree: never committed or cleaned. */
  readonly #exclude: string[];
  /** Where the repository's directory lies under the work tree's top (`git rev-parse --show-prefix`). */
  #prefix: Promise<string> | undefined;

  /**
   * @param root the work tree's top directory
   * @param record directories of the run record (the runs directory); those inside the tree are
   *   left out of status, commits and clean-ups
   */
  constructor(root: string, record: readonly string[] = []) {
    this.#root = root;
    this.#exclude = record
      .map((dir) => relative(root, dir))
      .filter((rel) => rel !== '' && !rel.startsWith('..') && !isAbsolute(rel))
      .map((rel) => `:(exclude)${rel}`);
  }

  async ensureReady(options: { readonly dirtyOk?: boolean } = {}): Promise<void> {
    const top = await runGit(this.#root, ['rev-parse', '--show-toplevel']);
    if (top.exitCode !== 0) throw this.#notARepo(top.stderr);
    if ((await runGit(this.#root, ['rev-parse', '--verify', '-q', 'HEAD'])).exitCode !== 0) {
      throw new FabricError(
        'usage',
        `${this.#root} has no commit yet. Commit the crate and openspec/ first.`,
      );
    }
    if ((await runGit(this.#root, ['symbolic-ref', '-q', 'HEAD'])).exitCode !== 0) {
      throw new FabricError(
        'usage',
        `${this.#root}: HEAD is detached. Check out a branch (git switch -c daemon-work) so the daemon's commits are kept.`,
      );
    }
    for (const [ref, what] of [
      ['MERGE_HEAD', 'a merge'],
      ['CHERRY_PICK_HEAD', 'a cherry-pick'],
      ['REVERT_HEAD', 'a revert'],
      ['rebase-merge', 'a rebase'],
      ['rebase-apply', 'a rebase'],
    ] as const) {
      const path = (await git(this.#root, ['rev-parse', '--git-path', ref], 'Finding git state')).trim();
      if (await exists(isAbsolute(path) ? path : `${this.#root}/${path}`)) {
        throw new FabricError(
          'usage',
          `${this.#root}: ${what} is in progress. Finish or abort it (git status says how), then start the daemon.`,
        );
      }
    }
    if (options.dirtyOk === true) return;
    const dirty = await this.#status();
    if (dirty !== '') {
      const lines = dirty.split('\n').filter((line) => line !== '');
      const shown = lines.slice(0, 10).join('\n  ');
      // Say how many there are: ten of 973 listed silently looked like ten (issue 34).
      const more = lines.length > 10 ? `\n  … and ${lines.length - 10} more (git status lists them all)` : '';
      const count = lines.length === 1 ? '1 file' : `${lines.length} files`;
      throw new FabricError(
        'usage',
        `${this.#root} has uncommitted changes (${count}); the daemon refuses to start so that it never discards work it did not make. Commit or stash them first:\n  ${shown}${more}`,
      );
    }
  }

  async lock(): Promise<() => Promise<void>> {
    const gitDir = await runGit(this.#root, ['rev-parse', '--absolute-git-dir']);
    if (gitDir.exitCode !== 0) throw this.#notARepo(gitDir.stderr);
    return acquireLock(`${gitDir.stdout.trim()}/fabric-daemon.lock`, this.#root);
  }

  #notARepo(said: string): FabricError {
    return new FabricError(
      'usage',
      `${this.#root} is not a git work tree (${said.trim()}). The daemon commits each task: run \`git init\` and make a first commit, or pass --repo DIR.`,
    );
  }

  async head(): Promise<string> {
    return (await git(this.#root, ['rev-parse', 'HEAD'], 'Reading HEAD')).trim();
  }

  async restore(): Promise<void> {
    await git(this.#root, ['reset', '-q', '--hard', 'HEAD'], 'Restoring the last commit');
    // Untracked files the run made; ignored ones (target/) stay, and so does the run record.
    await git(
      this.#root,
      ['clean', '-q', '-f', '-d', '--', '.', ...this.#exclude],
      'Removing the run’s new files',
    );
  }

  async commit(message: string): Promise<{ readonly commit: string; readonly size: ChangeSize }> {
    await git(this.#root, ['add', '-A', '--', '.', ...this.#exclude], 'Staging the task');
    const size = parseNumstat(await git(this.#root, ['diff', '--cached', '--numstat'], 'Measuring the task'));
    const out = await runGit(this.#root, ['commit', '-q', '-m', message]);
    if (out.exitCode !== 0) {
      const said = (out.stderr || out.stdout).trim();
      throw new FabricError(
        'tool_failed',
        `git commit failed (a commit hook, or no user.name/user.email?): ${said || `exit code ${out.exitCode}`}`,
      );
    }
    return { commit: await this.head(), size };
  }

  async setAside(name: string, message: string): Promise<string> {
    const ref = parkedRef(`${PARKED_REFS}/${name}`);
    const tree = await this.#treeOfWorkTree();
    const commit = (
      await git(
        this.#root,
        ['commit-tree', tree, '-p', 'HEAD', '-m', message],
        'Setting the changes aside',
        'tool_failed',
        {
          // A ref of the fabric's own, never on a branch: no identity of the user's is needed.
          GIT_AUTHOR_NAME: 'fabric daemon',
          GIT_AUTHOR_EMAIL: 'fabric-daemon@localhost',
          GIT_COMMITTER_NAME: 'fabric daemon',
          GIT_COMMITTER_EMAIL: 'fabric-daemon@localhost',
        },
      )
    ).trim();
    await git(
      this.#root,
      ['update-ref', '-m', message.split('\n')[0] ?? message, ref, commit],
      'Keeping the changes set aside',
    );
    return ref;
  }

  async bringBack(
    ref: string,
  ): Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: string }> {
    parkedRef(ref);
    const [tree, base] = await Promise.all([
      git(this.#root, ['rev-parse', `${ref}^{tree}`], 'Reading the changes set aside'),
      git(this.#root, ['rev-parse', `${ref}^^{tree}`], 'Reading the changes set aside'),
    ]);
    // Nothing was set aside: the run had changed nothing yet.
    if (tree.trim() === base.trim()) return { ok: true };
    const picked = await runGit(this.#root, ['cherry-pick', '--no-commit', ref]);
    if (picked.exitCode === 0) {
      // As the run left them: changed, not staged.
      await git(this.#root, ['reset', '-q'], 'Unstaging the changes brought back');
      return { ok: true };
    }
    const clashed = (await runGit(this.#root, ['diff', '--name-only', '--diff-filter=U'])).stdout
      .split('\n')
      .filter((line) => line !== '');
    await runGit(this.#root, ['cherry-pick', '--quit']);
    await this.restore();
    const said = (picked.stderr || picked.stdout).trim().split('\n')[0] ?? '';
    return {
      ok: false,
      reason:
        clashed.length > 0
          ? `the edits set aside clash with what was committed since in ${clashed.join(', ')}`
          : `the edits set aside do not apply on HEAD (${said || `git cherry-pick exit ${picked.exitCode}`})`,
    };
  }

  async holdsAside(ref: string): Promise<boolean> {
    parkedRef(ref);
    const parent = await runGit(this.#root, ['rev-parse', '-q', '--verify', `${ref}^`]);
    if (parent.exitCode !== 0 || parent.stdout.trim() !== (await this.head())) return false;
    const aside = await git(this.#root, ['rev-parse', `${ref}^{tree}`], 'Reading the changes set aside');
    return aside.trim() === (await this.#treeOfWorkTree());
  }

  async dropAside(ref: string): Promise<void> {
    parkedRef(ref);
    await git(this.#root, ['update-ref', '-d', ref], 'Forgetting the changes set aside');
  }

  /** The git tree of the work tree as `commit` would take it, through an index of its own. */
  async #treeOfWorkTree(): Promise<string> {
    const gitDir = (await git(this.#root, ['rev-parse', '--absolute-git-dir'], 'Finding .git')).trim();
    const env = { GIT_INDEX_FILE: `${gitDir}/fabric-aside-${randomUUID()}.index` };
    try {
      await git(this.#root, ['read-tree', 'HEAD'], 'Reading HEAD', 'tool_failed', env);
      await git(
        this.#root,
        ['add', '-A', '--', '.', ...this.#exclude],
        'Taking the changes',
        'tool_failed',
        env,
      );
      return (await git(this.#root, ['write-tree'], 'Taking the changes', 'tool_failed', env)).trim();
    } finally {
      await rm(env.GIT_INDEX_FILE, { force: true });
    }
  }

  /** The files changed since HEAD, relative to this repository's directory (the daemon's --repo). */
  async changedFiles(): Promise<readonly string[]> {
    // git status names paths from the top of the work tree; --repo may be a folder inside it.
    this.#prefix ??= git(this.#root, ['rev-parse', '--show-prefix'], 'Reading the repository').then((out) =>
      out.trim(),
    );
    const prefix = await this.#prefix;
    const args = ['status', '--porcelain', '-z', '--untracked-files=all', '--', '.', ...this.#exclude];
    const out = await git(this.#root, args, 'Reading git status');
    const files: string[] = [];
    const entries = out.split('\0');
    for (let i = 0; i < entries.length; i += 1) {
      const entry = entries[i]!;
      if (entry.length < 4) continue;
      const path = entry.slice(3);
      files.push(path.startsWith(prefix) ? path.slice(prefix.length) : path);
      // A rename or copy is followed by the path it came from.
      if (entry[0] === 'R' || entry[0] === 'C') i += 1;
    }
    return files;
  }

  async #status(): Promise<string> {
    const args = ['status', '--porcelain', '--untracked-files=all', '--', '.', ...this.#exclude];
    return (await git(this.#root, args, 'Reading git status', 'usage')).trimEnd();
  }
}

function parseNumstat(text: string): ChangeSize {
  let files = 0;
  let added = 0;
  let removed = 0;
  for (const line of text.split('\n')) {
    const [a, r] = line.split('\t');
    if (a === undefined || r === undefined) continue;
    files += 1;
    // Binary files show `-`: counted as a file, not as lines.
    added += Number(a) || 0;
    removed += Number(r) || 0;
  }
  return { files, added, removed };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

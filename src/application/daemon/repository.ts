/**
 * The git port of the daemon (SPEC §11). The adapter (`src/infrastructure/git/`) runs git
 * itself, outside the model's sandbox: the model never runs git. Nothing here does I/O.
 */

/** What a commit changed: files, and lines added and removed (`git diff --numstat`). */
export interface ChangeSize {
  readonly files: number;
  readonly added: number;
  readonly removed: number;
}

/** A repository the daemon works in. Every method throws a `FabricError` that says what to do. */
export interface Repository {
  /**
   * Checks that the daemon may start: a git work tree with a first commit, on a branch, no merge
   * or rebase in progress, and nothing uncommitted (the daemon never discards what it did not make).
   * `dirtyOk`: changes are allowed, for a daemon that resumes the attempt that made them (SPEC §18).
   */
  ensureReady(options?: { readonly dirtyOk?: boolean }): Promise<void>;
  /** Takes the one-daemon-per-repository lock; the returned function releases it. */
  lock(): Promise<() => Promise<void>>;
  /** The commit checked out. */
  head(): Promise<string>;
  /** Puts the work tree back to the last commit: changes reset, files the daemon's run made removed. */
  restore(): Promise<void>;
  /** The files the work tree changes against the last commit (untracked ones too), repository-relative. */
  changedFiles(): Promise<readonly string[]>;
  /** Commits everything in the work tree (the task's work and its tick), hooks included. */
  commit(message: string): Promise<{ readonly commit: string; readonly size: ChangeSize }>;
  /**
   * Sets the work tree's changes aside (SPEC §19: a run parked on an approval): a commit on HEAD
   * of everything `commit` would take, untracked files included, kept under a ref named for
   * `name` outside the branches and the stash. The tree is left as it is; returns the ref.
   */
  setAside(name: string, message: string): Promise<string>;
  /**
   * Brings changes set aside back onto the clean tree at HEAD, merged with what was committed
   * since (three-way), uncommitted as the run left them. When they clash, the tree is put back
   * clean and the reason names the files; the ref is kept either way.
   */
  bringBack(ref: string): Promise<{ readonly ok: true } | { readonly ok: false; readonly reason: string }>;
  /** True when the work tree holds exactly what `ref` set aside, at the commit it was set aside on. */
  holdsAside(ref: string): Promise<boolean>;
  /** Forgets changes set aside (their ref). */
  dropAside(ref: string): Promise<void>;
}

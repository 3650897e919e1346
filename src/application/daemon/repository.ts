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
}

/**
 * The port that tells whether the process owning a run still exists (SPEC §6: a run with no
 * `run_end` whose process is gone is `interrupted`, never `running` for ever). The adapter is
 * `src/infrastructure/runlog/process-liveness.ts`. Nothing here does I/O.
 */

/** The process that owns a run, as `run_start` records it. */
export interface RunOwner {
  readonly pid: number;
  readonly host: string;
}

/** Answers "is this run's owner still running?". */
export interface ProcessLiveness {
  /**
   * `true` when the owner exists, `false` when it is certainly gone, `'unknown'` when this
   * machine cannot tell (the owner is on another host). `startedAt` is when the run began, so a
   * pid that a reboot has since handed to another process is not taken for the owner.
   */
  isOwnerAlive(owner: RunOwner, startedAt: Date): boolean | 'unknown';
}

/** What a reader needs to tell a run in progress from an abandoned one. */
export interface LivenessCheck {
  readonly liveness: ProcessLiveness;
  /** The time now; compared with a run's time budget when its owner cannot be checked. */
  readonly now: Date;
}

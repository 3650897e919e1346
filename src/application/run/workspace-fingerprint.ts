/**
 * The workspace as a step left it (SPEC §18): `step_end` records a fingerprint, and a resumed run
 * compares the workspace with it to tell the model what a person changed in between.
 */
export interface WorkspaceFingerprint {
  /** An id of the workspace's files as they are now; null when it cannot be taken (no git). */
  take(): Promise<string | null>;
  /** The paths that differ between two fingerprints this adapter took (relative to the workspace). */
  changed(from: string, to: string): Promise<readonly string[]>;
}

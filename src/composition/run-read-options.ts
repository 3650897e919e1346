import type { LiveRuns } from '../application/runs/run-read-model.ts';
import type { ProcessLiveness } from '../application/runs/liveness-ports.ts';

/** Which sources a reader of runs wires into its read model (`Fabric.runReadModel`). */
export interface RunReadModelOptions {
  /** The runs in progress in this process that the reader can see (a server's hub). */
  readonly live?: LiveRuns | undefined;
  /**
   * When a run with no runlog here is looked for in the control plane: `always` (MCP), or only
   * while runs are queued for workers (`queue`, the HTTP API). Default `always`.
   */
  readonly control?: 'always' | 'queue' | 'never';
  /** `list` merges the control plane's newest runs with the runlogs (as `fabric runs` does). */
  readonly listControlRuns?: boolean;
  /** A control row still `running` stands until its run_end or the reaper (the HTTP API). */
  readonly controlRowDecides?: boolean;
  /** Tells whether a run's process still exists; default: this machine's. */
  readonly liveness?: ProcessLiveness | undefined;
  /** How many ended runs' records to keep between calls (the viewer's paging); default none. */
  readonly cacheEnded?: number;
}

import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';

/**
 * Checks that a runlog holds one run from its start: at least one line, `run_start` first, one
 * run id throughout. Replay and the timeline need that; a listing can do without. Throws
 * `runlog_corrupt` with a message that names the problem.
 */
export function requireWholeRun(run: {
  readonly location: string;
  readonly events: readonly RunEvent[];
  readonly torn: boolean;
}): void {
  const [first] = run.events;
  if (first === undefined) {
    throw new FabricError(
      'runlog_corrupt',
      run.torn
        ? `${run.location} holds only a torn line: its process was killed while writing the first one. There is no run to show.`
        : `${run.location} is empty: no run was recorded in it (its process died before the first line, or this is not a runlog).`,
    );
  }
  if (first.kind !== 'run_start') {
    throw new FabricError(
      'runlog_corrupt',
      `${run.location} does not begin with run_start (line 1 is ${first.kind}, seq ${first.seq}): the start of the run is missing, so it cannot be shown or replayed.`,
    );
  }
  const other = run.events.find((event) => event.run_id !== first.run_id);
  if (other !== undefined) {
    throw new FabricError(
      'runlog_corrupt',
      `${run.location} mixes runs: seq ${other.seq} belongs to ${other.run_id}, not ${first.run_id}. Each run has its own runlog.`,
    );
  }
}

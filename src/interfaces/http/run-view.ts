import type { RunRecord } from '../../application/runs/run-record.ts';

/** Where a run's resources are, relative to the server. */
export interface RunLinks {
  readonly self: string;
  readonly events: string;
  readonly runlog: string;
  readonly cancel: string;
  readonly replay: string;
}

/**
 * A run as the API shows it: the read model's record, with its links. `runlog` is the
 * path on the server, empty for a run only the control plane holds (a worker's, a queued one).
 */
export interface RunView extends Omit<RunRecord, 'source' | 'runlog'> {
  readonly runlog: string;
  readonly links: RunLinks;
}

/** The links of a run. */
export function runLinks(runId: string): RunLinks {
  const self = `/v1/runs/${encodeURIComponent(runId)}`;
  return {
    self,
    events: `${self}/events`,
    runlog: `${self}/runlog`,
    cancel: `${self}/cancel`,
    replay: `${self}/replay`,
  };
}

/** The API's view of a run's record. */
export function runViewOf(record: RunRecord): RunView {
  const { source: _source, runlog, ...rest } = record;
  return { ...rest, runlog: runlog ?? '', links: runLinks(record.run_id) };
}

/**
 * The server's side of parked runs (SPEC §19): a run parked on an approval is resumed here, live
 * in the hub (its SSE stream, the viewer), as `POST /v1/runs/:id/resume` does, parking again on
 * the next approval it needs.
 */
import { ParkedRuns } from '../../application/approvals/parked-runs.ts';
import { isParkedForAnyone } from '../../application/approvals/cancel-parked.ts';
import type { Fabric } from '../../composition/fabric.ts';
import type { RunHub } from './run-hub.ts';

export function parkedRunsFor(fabric: Fabric, hub: RunHub, log: (line: string) => void): ParkedRuns {
  return new ParkedRuns({
    approvals: fabric.approvals,
    isParked: async (runId) =>
      hub.get(runId) === undefined && (await isParkedForAnyone(fabric.runLogStore, runId).catch(() => false)),
    resume: async (runId) => {
      const backlog = (await fabric.runLogStore.read(runId)).events;
      const live = await hub.resume(runId, backlog, (observer, signal) =>
        fabric.resume({ run: runId, observers: [observer], signal, defaultOnApproval: 'park' }),
      );
      log(`run ${runId} resumed after its approval`);
      void live.settled.then((result) => log(`run ${runId} ${result?.status ?? 'failed'}`));
    },
    log,
  });
}

/**
 * Cancelling a parked run (SPEC §19): no process runs it, so its end is written here, after its
 * last line — each pending approval `cancelled` (so nothing resumes it, and nobody is asked any
 * more), then `run_end` `cancelled`, with the run's steps and usage as it parked.
 */
import { FabricError } from '../../domain/errors.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { ResumableRunLogs, RunLogStore } from '../ports.ts';
import type { ApprovalStore } from './approval-store.ts';

export interface CancelParkedDeps {
  readonly runLogStore: RunLogStore & ResumableRunLogs;
  readonly approvals: ApprovalStore;
  readonly now: () => Date;
}

/**
 * A run whose record ends parked, and who alone goes on with it (`run_start.resumer`: the
 * OpenSpec daemon, which holds its edits aside); undefined when it is not parked.
 */
export function parkedRun(events: readonly RunEvent[]): { readonly resumer: string | undefined } | undefined {
  const last = events.at(-1);
  if (last?.kind !== 'run_end' || last.status !== 'awaiting_approval') return undefined;
  const start = events.find((event) => event.kind === 'run_start');
  return { resumer: start?.kind === 'run_start' ? start.resumer : undefined };
}

/** True when the run's record ends parked and any process may go on with it. */
export async function isParkedForAnyone(runLogStore: RunLogStore, runId: string): Promise<boolean> {
  const parked = parkedRun((await runLogStore.read(runId)).events);
  return parked !== undefined && parked.resumer === undefined;
}

/** Ends a parked run `cancelled`; `channel` says through which (http, cli, mcp). */
export async function cancelParkedRun(deps: CancelParkedDeps, runId: string, channel: string): Promise<void> {
  const contents = await deps.runLogStore.read(runId);
  const parked = contents.events.at(-1);
  if (parked?.kind !== 'run_end' || parked.status !== 'awaiting_approval')
    throw new FabricError(
      'run_finished',
      `Run ${runId} is not parked on an approval: nothing to cancel here.`,
    );
  const at = deps.now().toISOString();
  const cancelled = [];
  for (const record of await deps.approvals.list({ runId: contents.runId, state: 'pending' })) {
    try {
      cancelled.push(
        await deps.approvals.answer(record.id, {
          state: 'cancelled',
          scope: 'once',
          pattern: 0,
          channel,
          by: 'the run was cancelled',
          at,
        }),
      );
    } catch (error) {
      // Answered meanwhile: the run goes on with that answer instead, and is not ended here.
      if (error instanceof FabricError && error.code === 'approval_answered') return;
      throw error;
    }
  }
  const log = await deps.runLogStore.reopen(contents.runId);
  try {
    for (const record of cancelled)
      await log.append({
        kind: 'approval_decided',
        step: record.step,
        call_id: record.call_id,
        approval_id: record.id,
        state: 'cancelled',
        scope: 'once',
        channel,
        by: 'the run was cancelled',
        answered_at: at,
      });
    await log.append({
      kind: 'run_end',
      status: 'cancelled',
      payload: null,
      error: { code: 'run_cancelled', message: 'The run was cancelled while it waited for approval.' },
      steps: parked.steps,
      usage: parked.usage,
      duration_ms: 0,
    });
  } finally {
    await log.close();
  }
}

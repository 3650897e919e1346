/**
 * Parked runs go on once answered (SPEC §19): a run that stopped as `awaiting_approval` is
 * resumed (§18) when none of its approvals is pending any more — answered through any channel
 * (this server's HTTP and viewer at once, `fabric approvals answer` or another server within a
 * poll) or expired. A server that starts finds the parked runs answered while none ran. One
 * resume per run at a time here; another process resuming it too is refused by §18's owner check.
 */
import { errorMessage } from '../../domain/errors.ts';
import type { ApprovalRecord } from '../../domain/approvals.ts';
import type { ApprovalStore } from './approval-store.ts';

export interface ParkedRunsPorts {
  readonly approvals: ApprovalStore;
  /** True when the run's record ends parked (`run_end` `awaiting_approval`) and nothing runs it here. */
  isParked(runId: string): Promise<boolean>;
  /** Starts resuming the run; resolves once it has started (or was refused). */
  resume(runId: string): Promise<void>;
  readonly log?: ((line: string) => void) | undefined;
}

export class ParkedRuns {
  readonly #ports: ParkedRunsPorts;
  /** Runs being resumed now. */
  readonly #resuming = new Set<string>();
  /** Per run, the newest approval already dealt with: looked at again only when a newer one comes. */
  readonly #settled = new Map<string, string>();
  #ticking: Promise<void> | undefined;

  constructor(ports: ParkedRunsPorts) {
    this.#ports = ports;
  }

  /** An approval was answered here: its run goes on now, not at the next poll. */
  answered(record: ApprovalRecord): Promise<void> {
    return this.#consider(record.run_id, [record]).catch((error) =>
      this.#ports.log?.(`approval ${record.id}: run ${record.run_id} not resumed: ${errorMessage(error)}`),
    );
  }

  /** Looks at every run with approvals once (one look at a time); resumes those answered and parked. */
  tick(): Promise<void> {
    this.#ticking ??= this.#tick().finally(() => {
      this.#ticking = undefined;
    });
    return this.#ticking;
  }

  /** Ticks every `intervalMs` until the returned function is called. */
  start(intervalMs: number): () => void {
    void this.tick();
    const timer = setInterval(() => void this.tick(), intervalMs);
    timer.unref?.();
    return () => clearInterval(timer);
  }

  async #tick(): Promise<void> {
    let records: ApprovalRecord[];
    try {
      records = await this.#ports.approvals.list();
    } catch (error) {
      this.#ports.log?.(`approvals unreadable: ${errorMessage(error)}`);
      return;
    }
    const byRun = new Map<string, ApprovalRecord[]>();
    for (const record of records) byRun.set(record.run_id, [...(byRun.get(record.run_id) ?? []), record]);
    for (const [runId, own] of byRun) {
      try {
        await this.#consider(runId, own);
      } catch (error) {
        this.#ports.log?.(`run ${runId} not resumed: ${errorMessage(error)}`);
      }
    }
  }

  async #consider(runId: string, known: readonly ApprovalRecord[]): Promise<void> {
    if (this.#resuming.has(runId)) return;
    const own = known.length > 1 ? known : await this.#ports.approvals.list({ runId });
    if (own.some((record) => record.state === 'pending')) return;
    const newest = own.reduce<ApprovalRecord | undefined>(
      (last, record) => (last === undefined || record.requested_at > last.requested_at ? record : last),
      undefined,
    );
    if (newest === undefined || this.#settled.get(runId) === newest.id) return;
    if (!(await this.#ports.isParked(runId))) {
      this.#settled.set(runId, newest.id);
      return;
    }
    this.#resuming.add(runId);
    try {
      this.#ports.log?.(`run ${runId}: approval ${newest.id} ${newest.state}; resuming`);
      await this.#ports.resume(runId);
      this.#settled.set(runId, newest.id);
    } finally {
      this.#resuming.delete(runId);
    }
  }
}

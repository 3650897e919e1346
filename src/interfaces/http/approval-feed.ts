/**
 * `GET /v1/approvals/events` (SPEC §19): every approval of this runs directory as it is asked and
 * answered, whichever run, process or channel it comes from — one stream for a dashboard, a phone,
 * a chat bridge. A client connecting gets the pending ones first, then each change. Answers given
 * to this server are sent at once; others (another server, `fabric approvals answer`, a daemon's
 * run, an expiry) within a second: the store is looked at once a second while anyone listens.
 */
import type { ApprovalStore } from '../../application/approvals/approval-store.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { ApprovalRecord, ApprovalState } from '../../domain/approvals.ts';
import type { SseEvent } from './sse.ts';

/** One frame of the stream: an approval asked (`pending`) or answered, expired or cancelled. */
export interface ApprovalFeedEvent extends SseEvent {
  readonly kind: 'approval_requested' | 'approval_decided';
  readonly approval: ApprovalRecord;
}

type Listener = (event: ApprovalFeedEvent) => void;

const POLL_MS = 1000;

export class ApprovalFeed {
  readonly #store: Pick<ApprovalStore, 'list'>;
  readonly #log: (line: string) => void;
  readonly #listeners = new Set<Listener>();
  /** Each approval's state as last sent; undefined until the first look. */
  #known: Map<string, ApprovalState> | undefined;
  /** The approvals as the last look found them, newest first. */
  #latest: readonly ApprovalRecord[] = [];
  #seq = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #looking: Promise<void> | undefined;

  constructor(store: Pick<ApprovalStore, 'list'>, log: (line: string) => void) {
    this.#store = store;
    this.#log = log;
  }

  /**
   * Listens: `send` gets the approvals pending now (as `approval_requested`), then every change.
   * Returns how to stop listening.
   */
  async listen(send: Listener): Promise<() => void> {
    await this.#look();
    // No await from here on: nothing the next look sends can fall between the snapshot and the listener.
    for (const record of [...this.#latest].reverse())
      if (record.state === 'pending') send(this.#event('approval_requested', record));
    this.#listeners.add(send);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#look(), POLL_MS);
      this.#timer.unref?.();
    }
    return () => {
      this.#listeners.delete(send);
      if (this.#listeners.size === 0 && this.#timer !== undefined) {
        clearInterval(this.#timer);
        this.#timer = undefined;
        // Nobody listens: the next listener starts from a fresh look.
        this.#known = undefined;
      }
    };
  }

  /** An answer given to this server: sent now, not at the next look. */
  answered(record: ApprovalRecord): void {
    if (this.#known === undefined || this.#known.get(record.id) === record.state) return;
    this.#known.set(record.id, record.state);
    this.#emit(this.#event('approval_decided', record));
  }

  /** One look at the store: what appeared is sent as asked, what changed state as decided. */
  #look(): Promise<void> {
    this.#looking ??= this.#compare().finally(() => {
      this.#looking = undefined;
    });
    return this.#looking;
  }

  async #compare(): Promise<void> {
    let records: ApprovalRecord[];
    try {
      records = await this.#store.list();
    } catch (error) {
      this.#log(`approvals unreadable: ${errorMessage(error)}`);
      return;
    }
    const known = this.#known;
    this.#known = new Map(records.map((record) => [record.id, record.state]));
    this.#latest = records;
    // The first look is the baseline: what is pending then is sent to each listener as it joins.
    if (known === undefined) return;
    // Oldest first, as they happened.
    for (const record of [...records].reverse()) {
      const before = known.get(record.id);
      if (before === record.state) continue;
      // One answered before it was first seen is sent asked, as it was, then decided.
      if (before === undefined) this.#emit(this.#event('approval_requested', asAsked(record)));
      if (record.state !== 'pending') this.#emit(this.#event('approval_decided', record));
    }
  }

  #event(kind: ApprovalFeedEvent['kind'], approval: ApprovalRecord): ApprovalFeedEvent {
    this.#seq += 1;
    return { seq: this.#seq, kind, approval };
  }

  #emit(event: ApprovalFeedEvent): void {
    for (const listener of this.#listeners) listener(event);
  }
}

/** The approval as it was asked: pending, without its answer. */
function asAsked(record: ApprovalRecord): ApprovalRecord {
  if (record.state === 'pending') return record;
  const { answer: _answer, ...asked } = record;
  return { ...asked, state: 'pending' };
}

/**
 * The batteries this server runs (SPEC §12): each a session running in the background, its
 * progress kept as numbered events that SSE streams follow (and resume, with `Last-Event-ID`),
 * and cancelled on shutdown like runs are — the cells not done stay resumable.
 */
import type { LiveBatteries, LiveBatteryView } from '../../application/battery/battery-read-model.ts';
import type { BatterySummary } from '../../application/battery/battery-summary.ts';
import type { CellKey, CellResult } from '../../application/battery/battery-types.ts';
import { errorMessage } from '../../domain/errors.ts';
import type { BatterySession } from '../../application/battery/battery-session.ts';

/** A battery's progress, as its SSE stream sends it. */
export type BatteryEvent =
  | ({ readonly seq: number; readonly kind: 'cell_start'; readonly battery_id: string } & CellKey)
  | {
      readonly seq: number;
      readonly kind: 'cell_end';
      readonly battery_id: string;
      readonly cell: CellResult;
    }
  | {
      readonly seq: number;
      readonly kind: 'battery_end';
      readonly battery_id: string;
      readonly status: 'done' | 'interrupted';
      /** Why the battery stopped early (the server shut down), or null. */
      readonly reason: string | null;
      readonly result: BatterySummary;
    };

/** A battery this server runs or ran. */
export interface LiveBattery {
  readonly id: string;
  readonly session: BatterySession;
  readonly controller: AbortController;
  readonly events: BatteryEvent[];
  readonly subscribers: Set<(event: BatteryEvent) => void>;
  /** Settles when the battery has ended and its state file says so. */
  readonly settled: Promise<void>;
}

/** Ended batteries kept for their streams; older ones are read from their state files. */
const KEEP_ENDED = 20;

/** Distributive, so each kind keeps its own fields. */
type EventBody = BatteryEvent extends infer E ? (E extends BatteryEvent ? Omit<E, 'seq'> : never) : never;

export class BatteryHub implements LiveBatteries {
  readonly #batteries = new Map<string, LiveBattery>();
  readonly #ended: string[] = [];

  /** Starts running `session` in the background. */
  start(session: BatterySession): LiveBattery {
    const id = session.plan.id;
    const controller = new AbortController();
    const events: BatteryEvent[] = [];
    const subscribers = new Set<(event: BatteryEvent) => void>();
    const emit = (body: EventBody) => {
      const event = { ...body, seq: events.length + 1 } as BatteryEvent;
      events.push(event);
      for (const subscriber of subscribers) {
        try {
          subscriber(event);
        } catch {
          // A stream that broke must not stop the others, nor the battery.
        }
      }
    };
    const settled = session
      .run(controller.signal, {
        onCellStart: (cell) => emit({ kind: 'cell_start', battery_id: id, ...cell }),
        onCellEnd: (cell) => emit({ kind: 'cell_end', battery_id: id, cell }),
      })
      .then(
        (outcome) => (outcome.interrupted ? reasonOf(controller.signal) : null),
        (error: unknown) => `the battery stopped: ${errorMessage(error)}`,
      )
      .then((reason) => {
        emit({
          kind: 'battery_end',
          battery_id: id,
          status: reason === null ? 'done' : 'interrupted',
          reason,
          result: session.summary(),
        });
        this.#retire(id);
      });
    const live: LiveBattery = { id, session, controller, events, subscribers, settled };
    this.#batteries.set(id, live);
    return live;
  }

  /** The battery with this id, while it runs or among the last ended here. */
  get(id: string): LiveBattery | undefined {
    return this.#batteries.get(id);
  }

  /** Whether the battery is still running here. */
  running(id: string): boolean {
    return this.#batteries.has(id) && !this.#ended.includes(id);
  }

  /** A battery as the read model shows it, while it runs or among the last ended here. */
  live(id: string): LiveBatteryView | undefined {
    const live = this.#batteries.get(id);
    if (live === undefined) return undefined;
    const { session } = live;
    const running = this.running(id);
    const ended = live.events.at(-1);
    return {
      plan: session.plan,
      running,
      status: running ? 'running' : ended?.kind === 'battery_end' ? ended.status : session.status,
      cells: session.cells(),
      started: session.started(),
    };
  }

  liveIds(): readonly string[] {
    return [...this.#batteries.keys()];
  }

  /**
   * Sends the events after `afterSeq`, then each new one. Returns how to stop following, or
   * undefined when the battery is not here.
   */
  follow(id: string, afterSeq: number, onEvent: (event: BatteryEvent) => void): (() => void) | undefined {
    const live = this.#batteries.get(id);
    if (live === undefined) return undefined;
    // Backlog and subscription in one synchronous step, so no event falls between them.
    for (const event of live.events) if (event.seq > afterSeq) onEvent(event);
    live.subscribers.add(onEvent);
    return () => live.subscribers.delete(onEvent);
  }

  /** Cancels every running battery and waits until each has recorded where it stopped. */
  async close(reason = 'the server is shutting down'): Promise<void> {
    const running = [...this.#batteries.values()].filter((live) => this.running(live.id));
    for (const live of running) live.controller.abort(new Error(reason));
    await Promise.all(running.map((live) => live.settled));
  }

  #retire(id: string): void {
    this.#ended.push(id);
    while (this.#ended.length > KEEP_ENDED) {
      const oldest = this.#ended.shift();
      if (oldest !== undefined) this.#batteries.delete(oldest);
    }
  }
}

function reasonOf(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return `cancelled: ${reason instanceof Error ? reason.message : String(reason ?? 'stopped')}; the cells not done are resumable`;
}

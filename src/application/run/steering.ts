/**
 * Steering a running run (SPEC §19): a person's message, a pause and its end reach the process
 * that owns the run through the run's inbox (ADR 0019), which the loop reads between steps and,
 * for an interrupt, while the model answers. Nothing here does I/O; the inbox is a port.
 */
import type { Conversation } from './model-turn.ts';
import type { RunRecorder } from './run-recorder.ts';

/** One line of a run's inbox: what a person asked of the run, and through which channel. */
export type InboxEntry =
  | {
      readonly id: string;
      readonly kind: 'message';
      readonly text: string;
      readonly mode: 'steer' | 'interrupt';
      readonly channel: string;
    }
  | { readonly id: string; readonly kind: 'pause' | 'unpause'; readonly channel: string };

/** Reads a run's inbox: each call returns the entries written since the last one. */
export interface InboxReader {
  read(): Promise<readonly InboxEntry[]>;
}

/** The inboxes of the runs in a runs directory. */
export interface RunInboxes {
  /** A reader from the inbox's start: the owner, which applies each entry once. */
  reader(runId: string): InboxReader;
  /** Appends an entry (whole, or not at all). */
  post(runId: string, entry: InboxEntry): Promise<void>;
}

const POLL_MS = 200;

/** The loop's side of the inbox: applies messages between steps and holds while paused. */
export class Steering {
  readonly #reader: InboxReader;
  readonly #recorder: RunRecorder;
  readonly #pollMs: number;
  #pending: InboxEntry[] = [];
  #paused = false;
  #reading: Promise<void> | undefined;
  /** When the inbox was last read (ms, monotonic); never before the first step. */
  #readAt = Number.NEGATIVE_INFINITY;

  constructor(reader: InboxReader, recorder: RunRecorder, pollMs = POLL_MS) {
    this.#reader = reader;
    this.#recorder = recorder;
    this.#pollMs = pollMs;
  }

  /** Reads what arrived (one read at a time). An unreadable inbox is read again next time. */
  #poll(): Promise<void> {
    this.#readAt = performance.now();
    this.#reading ??= this.#reader
      .read()
      .then((entries) => {
        this.#pending.push(...entries);
      })
      .catch(() => {})
      .finally(() => {
        this.#reading = undefined;
      });
    return this.#reading;
  }

  /**
   * While a model turn is asked: a signal that aborts when an `interrupt` message arrives (the
   * turn is dropped and the message lands after this step). `stop` ends the watch.
   */
  watchTurn(): { readonly signal: AbortSignal; stop(): void } {
    const controller = new AbortController();
    const timer = setInterval(() => {
      void this.#poll().then(() => {
        if (this.#pending.some((entry) => entry.kind === 'message' && entry.mode === 'interrupt'))
          controller.abort(new Error('interrupted by a steer message'));
      });
    }, this.#pollMs);
    return { signal: controller.signal, stop: () => clearInterval(timer) };
  }

  /**
   * Between steps: each message becomes a user message at the end of the conversation (the
   * earlier messages, and so the server's cached prefix, stay as sent) and a `steer_message`
   * line; a pause holds here, sending nothing, until it is lifted or the run is cancelled.
   */
  async between(step: number, conversation: Conversation, signal: AbortSignal): Promise<void> {
    // Read at most once a poll period: a model step takes seconds, so each is read after, but a
    // loop of quick steps (scripted, cached) pays no file read per step; what comes lands after
    // a later step, still at the conversation's end.
    if (performance.now() - this.#readAt >= this.#pollMs) await this.#poll();
    for (;;) {
      for (let entry = this.#pending.shift(); entry !== undefined; entry = this.#pending.shift()) {
        if (entry.kind === 'message') {
          await this.#recorder.record({
            kind: 'steer_message',
            id: entry.id,
            text: entry.text,
            mode: entry.mode,
            channel: entry.channel,
            after_step: step,
          });
          conversation.messages.push({ role: 'user', content: entry.text });
        } else if (entry.kind === 'pause' && !this.#paused) {
          this.#paused = true;
          await this.#recorder.record({ kind: 'run_paused', step, channel: entry.channel });
        } else if (entry.kind === 'unpause' && this.#paused) {
          this.#paused = false;
          await this.#recorder.record({ kind: 'run_unpaused', step, channel: entry.channel });
        }
      }
      if (!this.#paused || signal.aborted) return;
      await this.#wait(signal);
      await this.#poll();
    }
  }

  /** One poll period, or less when the run is cancelled; leaves no listener behind either way. */
  #wait(signal: AbortSignal): Promise<void> {
    return new Promise<void>((done) => {
      const finish = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', finish);
        done();
      };
      const timer = setTimeout(finish, this.#pollMs);
      signal.addEventListener('abort', finish, { once: true });
    });
  }
}

import type { RunEvent, RunEventInput } from '../../domain/run-events.ts';
import type { RunLog, RunObserver } from '../ports.ts';

/** Writes events to the runlog and shows each one to the observers, which never break a run. */
export class RunRecorder {
  readonly #log: RunLog;
  readonly #observers: readonly RunObserver[];
  readonly #fence: (() => Error | undefined) | undefined;

  /** `fence`: asked before each line; an error (the run lost to another process) is thrown instead. */
  constructor(log: RunLog, observers: readonly RunObserver[], fence?: () => Error | undefined) {
    this.#log = log;
    this.#observers = observers;
    this.#fence = fence;
  }

  get location(): string {
    return this.#log.location;
  }

  async record(event: RunEventInput): Promise<RunEvent> {
    const lost = this.#fence?.();
    if (lost !== undefined) throw lost;
    const stamped = await this.#log.append(event);
    for (const observer of this.#observers) {
      try {
        observer.onEvent(stamped);
      } catch {
        // An observer (progress display, control mirror) must never fail the run.
      }
    }
    return stamped;
  }

  text(text: string): void {
    for (const observer of this.#observers) {
      try {
        observer.onText(text);
      } catch {}
    }
  }

  toolCallStarted(name: string): void {
    for (const observer of this.#observers) {
      try {
        observer.onToolCallStarted(name);
      } catch {}
    }
  }
}

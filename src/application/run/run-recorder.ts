import type { RunEvent, RunEventInput } from '../../domain/run-events.ts';
import type { RunLog, RunObserver } from '../ports.ts';

/** Writes events to the runlog and shows each one to the observers, which never break a run. */
export class RunRecorder {
  readonly #log: RunLog;
  readonly #observers: readonly RunObserver[];

  constructor(log: RunLog, observers: readonly RunObserver[]) {
    this.#log = log;
    this.#observers = observers;
  }

  get location(): string {
    return this.#log.location;
  }

  async record(event: RunEventInput): Promise<RunEvent> {
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

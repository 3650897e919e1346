/**
 * A battery's rows in the control plane (SPEC §7, §12), written best-effort in the background:
 * in order (the battery's row before its cells), never awaited by a cell, and a store that
 * fails, hangs or is off never fails the battery — its state file is the record.
 */
import { type BatteryRow, type BatterySink, isBatterySink } from './battery-ports.ts';
import type { ControlWriter } from '../control/control-ports.ts';
import type { CellResult } from './battery-types.ts';

/** How long the end of a battery waits for its last rows. */
const SETTLE_MS = 5000;

/** Queues a battery's rows for the process's control store, if it keeps batteries. */
export class BatteryControlRows {
  readonly #sink: Promise<(BatterySink & Pick<ControlWriter, 'migrate'>) | null>;
  #queue: Promise<void> = Promise.resolve();
  #migrated: Promise<unknown> | null = null;

  /** `store`: the process's control store (null when off); a store that fails to open is off. */
  constructor(store: Promise<unknown>) {
    this.#sink = store.then(
      (opened) =>
        isBatterySink(opened) && typeof (opened as Partial<ControlWriter>).migrate === 'function'
          ? (opened as BatterySink & Pick<ControlWriter, 'migrate'>)
          : null,
      () => null,
    );
  }

  battery(row: BatteryRow): void {
    this.#enqueue((sink) => sink.recordBattery(row));
  }

  cell(batteryId: string, result: CellResult): void {
    this.#enqueue((sink) => sink.recordBatteryCell(batteryId, result));
  }

  /** Resolves once what is queued is written, or after `timeoutMs`; never rejects. */
  async settled(timeoutMs = SETTLE_MS): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs);
    });
    await Promise.race([this.#queue, timeout]).finally(() => clearTimeout(timer));
  }

  #enqueue(write: (sink: BatterySink) => Promise<void>): void {
    this.#queue = this.#queue.then(async () => {
      const sink = await this.#sink;
      if (sink === null) return;
      try {
        // The tables may be newer than the store's schema: migrating is idempotent, and tried
        // again after a failure (the database may come back).
        this.#migrated ??= sink.migrate();
        await this.#migrated;
        // `fabric control sync` does not rebuild these rows; the next write of the row does.
        await write(sink);
      } catch {
        this.#migrated = null;
      }
    });
  }
}

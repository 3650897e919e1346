import type { ControlStore } from '../application/control-ports.ts';
import type { RunObserver } from '../application/ports.ts';
import type { FabricConfig } from '../config/load.ts';
import { ControlMirror } from '../infrastructure/control/control-mirror.ts';
import { openControlStore } from '../infrastructure/control/open-control-store.ts';

/** The control store a config names: Postgres for a DSN, else embedded PGlite; null when disabled. */
export function controlStoreFor(config: FabricConfig): ControlStore | null {
  return openControlStore({
    enabled: config.control.enabled,
    dsn: config.control.dsn,
    runsDir: config.runs_dir,
  });
}

const NO_MIRROR: RunObserver = { onEvent() {}, onText() {}, onToolCallStarted() {} };

/** A run's mirror to the control plane, and how to finish it without holding the run up for long. */
export interface RunMirror {
  readonly observer: RunObserver;
  /** Writes what is queued (bounded wait), then closes the store. Never throws. */
  finish(): Promise<void>;
}

/** Opens the control store and a mirror for one run. `onNotice` hears once when the database is off. */
export function startRunMirror(config: FabricConfig, onNotice: (message: string) => void): RunMirror {
  const store = controlStoreFor(config);
  // Turned off on purpose (control.enabled: false): nothing to mirror, and nothing to say.
  if (store === null) return { observer: NO_MIRROR, finish: async () => {} };
  const mirror = new ControlMirror(store, {
    onDegraded: (message) =>
      onNotice(`${message} The run goes on; \`fabric control sync\` fills in the control plane later.`),
  });
  return {
    observer: mirror,
    async finish() {
      await mirror.close();
      await store?.close().catch(() => {});
    },
  };
}

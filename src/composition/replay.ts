/**
 * The replay use case wired to a fabric's adapters: its pack registry and config, replay's own
 * workspace copy, and an in-memory runlog (a replay is a check, not a new run).
 */
import { RunReplay } from '../application/replay/replay-run.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { MemoryKeptOutputs } from '../infrastructure/memory/memory-kept-outputs.ts';
import { MemoryRunLogStore } from '../infrastructure/runlog/memory-run-log-store.ts';
import { copyReplayWorkspace } from '../infrastructure/workspace/replay-copy.ts';
import type { Fabric } from './fabric.ts';
import { FABRIC_VERSION } from './version.ts';

/** The replay use case for this fabric (`fabric replay --execute`, `POST /v1/runs/:id/replay`). */
export function createRunReplay(fabric: Fabric): RunReplay {
  return new RunReplay({
    copyWorkspace: copyReplayWorkspace,
    buildPack: (specialist, workspace) =>
      fabric.registry.getPack(specialist, workspace === undefined ? {} : { workspace }),
    runLogStore: () => new MemoryRunLogStore(systemClock),
    keptOutputs: () => new MemoryKeptOutputs(),
    clock: systemClock,
    settings: {
      recoverTextToolCalls: fabric.config.loop.recover_text_tool_calls,
      configDigest: fabric.config.digest,
      fabricVersion: FABRIC_VERSION,
    },
  });
}

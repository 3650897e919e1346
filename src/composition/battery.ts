/**
 * The battery's use cases wired to this process's adapters (SPEC §2, §12): the session
 * (`fabric battery`, `POST /v1/batteries`), the read model the HTTP API and the viewer list and
 * show batteries with, and a `fabric worker`'s job for a queued cell. Commands and routes get
 * them here and never build an adapter themselves.
 */
import { type BatteryRequest, BatterySession } from '../application/battery/battery-session.ts';
import { BatteryReadModel, type LiveBatteries } from '../application/battery/battery-read-model.ts';
import type { BatteryQueue, BatterySessionPorts } from '../application/battery/session-ports.ts';
import {
  type CellJobPorts,
  type QueuedCellRun,
  executeQueuedCell,
} from '../application/battery/worker-cell-job.ts';
import type { CellReports } from '../application/queue/queue-ports.ts';
import { loadBatteryFile } from '../config/battery-file.ts';
import { fileBatteryPaths } from '../infrastructure/battery/battery-paths.ts';
import { BatteryStateFiles } from '../infrastructure/battery/battery-state-file.ts';
import { sandboxCommandPolicy, shellAllowlist } from '../infrastructure/battery/expect-command-policy.ts';
import { SandboxExpectChecks } from '../infrastructure/battery/expect-checks.ts';
import { systemClock } from '../infrastructure/clock.ts';
import { specialistSandbox } from '../infrastructure/packs/rust/rust-sandbox.ts';
import { ArchiveCache, ArchiveWorkspaces } from '../infrastructure/workspace/archive-workspaces.ts';
import { packWorkspace } from '../infrastructure/workspace/workspace-archive.ts';
import { WorkspaceCopies } from '../infrastructure/workspace/workspace-copy.ts';
import type { Fabric } from './fabric.ts';

/** A specialist's `expect` checks: its sandbox (the rust pack's defaults included) and allowlist. */
function checksFor(fabric: Fabric, specialist: string): SandboxExpectChecks {
  const config = fabric.registry.config(specialist);
  // As the model's shell runs them: the allowlist and the commands allow rules name (SPEC §19).
  return new SandboxExpectChecks({
    ...specialistSandbox(config),
    allowed_commands: shellAllowlist(config, fabric.config.policy.rules),
  });
}

/** The ports of a battery session, on this fabric: its runs, models, control store and queue. */
export function batteryPorts(fabric: Fabric): BatterySessionPorts {
  const { config } = fabric;
  return {
    settings: {
      specialists: config.specialists,
      source: config.source,
      queued: config.queue === 'postgres',
      servers: config.llm.lm_studio_urls.length,
    },
    // A battery's cells run unattended: a call that needs approval is refused, never parked (SPEC §19).
    runTask: (request) => fabric.run({ defaultOnApproval: 'deny', ...request }),
    expandModelAlias: (name) => fabric.expandModelAlias(name),
    newRunId: () => fabric.newRunId(),
    // A battery waits for a llama-server still loading its model, as a run does.
    models: {
      probe: (signal) => fabric.catalog.probe(signal, () => {}),
      refresh: () => fabric.refreshCatalog(),
      release: async (model) => void (await fabric.unloadLoadedModel(model)),
    },
    readRunlog: async (ref) => (await fabric.runLogStore.read(ref)).events,
    states: new BatteryStateFiles(config.runs_dir),
    loadFile: loadBatteryFile,
    paths: fileBatteryPaths,
    commands: sandboxCommandPolicy(config.policy.rules),
    checksFor: (specialist) => checksFor(fabric, specialist),
    // The runs directory is never copied into a cell (it may sit inside the workspace).
    workspacesFor: (workspace) => new WorkspaceCopies(workspace ?? '.', [config.runs_dir]),
    controlStore: () => fabric.controlStore(),
    cards: fabric.modelCards(),
    queue: async (): Promise<BatteryQueue | null> => {
      const services = await fabric.runQueue();
      if (services === null) return null;
      return {
        queue: services.queue,
        workers: services.workers,
        cells: services.cells,
        runs: () => fabric.controlStore(),
        archive: (workspace) =>
          packWorkspace(
            workspace,
            { maxBytes: config.worker.archive_max_mib * 1024 * 1024, key: 'worker.archive_max_mib' },
            [config.runs_dir],
          ),
      };
    },
    clock: systemClock,
  };
}

/**
 * Plans a battery from its file, or picks up one to resume (`BatterySession.open`): throws
 * `config_invalid` (nothing runs) for a file that does not fit the config, `run_not_found` for
 * an unknown id.
 */
export function openBattery(fabric: Fabric, request: BatteryRequest): Promise<BatterySession> {
  return BatterySession.open(batteryPorts(fabric), request);
}

/**
 * The batteries of this fabric's runs directory: `live` (a server's hub) for the ones this
 * process runs, every other one from its state file.
 */
export function batteryReadModel(fabric: Fabric, live?: LiveBatteries): BatteryReadModel {
  return new BatteryReadModel(new BatteryStateFiles(fabric.config.runs_dir), live);
}

/** A queued cell's job on a `fabric worker`: runs it, checks it, reports its outcome. */
export type CellJob = (
  run: QueuedCellRun,
  signal: AbortSignal,
  onNotice: (message: string) => void,
) => Promise<void>;

/**
 * The worker's job for battery cells, on this fabric and queue. A battery's cells share its
 * archive: fetched once per worker (the job keeps the last few), unpacked per cell.
 */
export function cellJobFor(fabric: Fabric, services: { readonly cells: CellReports }): CellJob {
  const archives = new ArchiveCache();
  const ports: CellJobPorts = {
    // A battery's cells run unattended: a call that needs approval is refused, never parked (SPEC §19).
    runTask: (request) => fabric.run({ defaultOnApproval: 'deny', ...request }),
    checksFor: (specialist) => checksFor(fabric, specialist),
    readRunlog: async (ref) => (await fabric.runLogStore.read(ref)).events,
    workspacesFromArchive: (archive) =>
      new ArchiveWorkspaces(() => archives.get(archive, (id) => services.cells.archive(id))),
    reports: services.cells,
  };
  return (run, signal, onNotice) => executeQueuedCell(ports, run, signal, onNotice);
}

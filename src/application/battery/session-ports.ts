/**
 * The ports a battery's session reaches the world through (SPEC §2, §12): where its state is
 * kept, the file system it checks paths on, the sandbox policy its `expect.commands` must pass,
 * the models, the runs, the control plane and the queue. The composition root wires the adapters
 * (`src/composition/battery.ts`); the tests wire in-memory ones.
 */
import type { ModelCardStore } from '../models/model-card.ts';
import type { RunEvent } from '../../domain/run-events.ts';
import type { BatteryFile, KnownSpecialists } from '../../config/battery-file.ts';
import type { SpecialistConfig } from '../../config/schema.ts';
import type { ControlReader } from '../control/control-ports.ts';
import type { BackendProbe, Clock } from '../ports.ts';
import type { CellReports, RunQueue, WorkerRegistry } from '../queue/queue-ports.ts';
import type { RunTask } from '../run/run-request.ts';
import type { CellWorkspaces, ExpectChecks } from './battery-ports.ts';
import type { BatteryState } from './battery-types.ts';

/** Where battery states are kept: `<runs_dir>/batteries/<id>.json` (or memory, in tests). */
export interface BatteryStates {
  /** Writes the whole state; writes of one battery land in the order they were asked for. */
  save(state: BatteryState): Promise<void>;
  /**
   * The state of a battery: `usage` for a malformed id, `run_not_found` naming the id when there
   * is none, `runlog_corrupt` when what is kept cannot be read.
   */
  read(id: string): Promise<BatteryState>;
  /** The ids of the batteries kept, newest first (ids sort by start time). */
  ids(): Promise<string[]>;
  /** Where the state of battery `id` is kept, as shown to the user. */
  pathOf(id: string): string;
}

/** The cells' copies of a battery's workspace; `close` once the battery ends. */
export interface BatteryWorkspaces extends CellWorkspaces {
  close(): Promise<void>;
}

/** What a battery's paths are on this machine. */
export interface BatteryPaths {
  /** `directory`, `other` (a file, …) or `missing`. Synchronous: a battery file's checks run while it is parsed. */
  kind(path: string): 'directory' | 'other' | 'missing';
  /** `path` (relative to the battery file `file`, or absolute) as an absolute path. */
  besideFile(file: string, path: string): string;
  /** The path with its links resolved (the plan keeps it: cells copy that directory). */
  canonical(path: string): Promise<string>;
}

/** The specialist's command sandbox, as `expect.commands` must pass it before anything runs. */
export interface ExpectCommandPolicy {
  /** The commands the specialist's sandbox allows, as configured (for messages). */
  allowedCommands(specialist: SpecialistConfig): readonly string[];
  /** Why the sandbox would refuse `command` run in `root`, or null when it would run it. */
  refusal(specialist: SpecialistConfig, command: string, root: string): string | null;
}

/** The backends' models, as a battery asks for them (never a server URL). */
export interface BatteryModels {
  probe(signal: AbortSignal): Promise<readonly BackendProbe[]>;
  /** Forgets what the backends were last seen to have, so the next probe asks them again. */
  refresh(): void;
  /**
   * Unloads a model from the servers this process loaded it on (at a run's window), never one
   * loaded by hand: after a model's cells, so the next model has the memory (SPEC §12.1).
   */
  release?(model: string): Promise<void>;
}

/** The queue's part a battery uses to have its cells run by `fabric worker`s. */
export interface BatteryQueue {
  readonly queue: Pick<RunQueue, 'enqueue'>;
  readonly workers: Pick<WorkerRegistry, 'recordQueued' | 'requestCancel'>;
  readonly cells: Pick<CellReports, 'putArchive' | 'outcome'>;
  /** The control plane's run rows (a worker that died leaves its run `interrupted`); null when off. */
  runs(): Promise<Pick<ControlReader, 'getRun'> | null>;
  /** The battery's workspace as one archive; `workspace_too_large` past the configured limit. */
  archive(workspace: string): Promise<Uint8Array>;
}

/** The config a battery is planned against. */
export interface BatterySettings {
  readonly specialists: Readonly<Record<string, SpecialistConfig>>;
  /** The config file, named in messages. */
  readonly source: string;
  /** Whether runs go through the Postgres queue (`queue: postgres`): workers then run the cells. */
  readonly queued: boolean;
  /** How many LM Studio servers there are: cells at once by default, in this process. */
  readonly servers: number;
}

/** Everything a battery's session needs. */
export interface BatterySessionPorts {
  readonly settings: BatterySettings;
  /** Starts a cell's run (an ordinary run, tagged with the battery and cell). */
  readonly runTask: RunTask;
  /** A model id or an `llm.models` alias, as the id it stands for. */
  readonly expandModelAlias: (name: string) => string;
  /** A new run id (a queued cell's run must have one before it starts). */
  readonly newRunId: () => string;
  readonly models: BatteryModels;
  /** A run's events, read back from its runlog (the checks and per-model figures read them). */
  readonly readRunlog?: (ref: string) => Promise<readonly RunEvent[]>;
  readonly states: BatteryStates;
  /** Reads and validates a battery file (`config_invalid` naming the field, exit 2). */
  readonly loadFile: (path: string, specialists?: KnownSpecialists) => Promise<BatteryFile>;
  readonly paths: BatteryPaths;
  readonly commands: ExpectCommandPolicy;
  /** A specialist's `expect` checks: its sandbox and allowlist. */
  readonly checksFor: (specialist: string) => ExpectChecks;
  /** Fresh copies of `workspace` (`.` when the battery has none), one per cell. */
  readonly workspacesFor: (workspace: string | undefined) => BatteryWorkspaces;
  /** The model cards a battery's pass rates are written onto (SPEC §20); absent: none are. */
  readonly cards?: ModelCardStore;
  /** The process's control store, if any; the battery's rows go there when it keeps batteries. */
  readonly controlStore: () => Promise<unknown>;
  /** The queue, with `queue: postgres`; null when cells run in this process. */
  readonly queue: () => Promise<BatteryQueue | null>;
  readonly clock: Clock;
}

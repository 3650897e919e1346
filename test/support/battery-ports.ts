/**
 * A battery session's ports in memory, for the battery's unit tests: no disk, no Postgres, no
 * model server. Runs are scripted per model; the states and the cells' workspaces are the
 * in-memory adapters; the clock moves one second per reading.
 */
import * as v from 'valibot';
import type { ExpectChecks } from '../../src/application/battery/battery-ports.ts';
import type { CheckOutcome } from '../../src/application/battery/battery-types.ts';
import type {
  BatteryQueue,
  BatterySessionPorts,
  ExpectCommandPolicy,
} from '../../src/application/battery/session-ports.ts';
import type { BackendProbe, CatalogModel } from '../../src/application/ports.ts';
import type { RunRequest } from '../../src/application/run/run-request.ts';
import { type BatteryFile, parseBatteryFile } from '../../src/config/battery-file.ts';
import { SpecialistSchema } from '../../src/config/schema.ts';
import { FabricError } from '../../src/domain/errors.ts';
import type { RunResult, RunStatus } from '../../src/domain/run-result.ts';
import { MemoryBatteryStates } from '../../src/infrastructure/memory/memory-battery-state.ts';
import { MemoryWorkspaces } from '../../src/infrastructure/memory/memory-workspaces.ts';

/** The workspace the test batteries name (a directory only the fake paths know). */
export const WORKSPACE = '/mem/compositor';

/** A model the backends have, tool-capable unless said otherwise. */
export function catalogModel(id: string, fields: Partial<CatalogModel> = {}): CatalogModel {
  return {
    id,
    backend: 'lm_studio',
    baseUrl: 'http://lm.test:1234',
    type: 'llm',
    toolUse: true,
    loaded: true,
    paramsB: 7,
    contextLength: 8192,
    maxContextLength: 32768,
    ...fields,
  };
}

/** How a scripted run ends: its status (and error), or a throw before it starts. */
export type ScriptedRun =
  | { readonly status: RunStatus; readonly steps?: number; readonly error?: string }
  | { readonly throws: string };

/** A run's result, as the run use case answers it. */
export function runResult(request: RunRequest, runId: string, script: ScriptedRun): RunResult {
  if ('throws' in script) throw new FabricError('model_not_found', script.throws);
  return {
    run_id: runId,
    status: script.status,
    payload: script.status === 'succeeded' ? { summary: 'done' } : null,
    error: script.error === undefined ? null : { code: 'internal', message: script.error },
    model: request.model ?? '',
    backend: 'lm_studio',
    steps: script.steps ?? 3,
    usage: { prompt_tokens: 90, completion_tokens: 10, total_tokens: 100 },
    runlog: `/mem/runs/${runId}/runlog.jsonl`,
  };
}

/** Checks that pass or fail as told: `failing` names the commands that fail. */
export class ScriptedChecks implements ExpectChecks {
  readonly failing: Set<string>;
  readonly asked: { workspace: string; check: string }[] = [];

  constructor(failing: readonly string[] = []) {
    this.failing = new Set(failing);
  }

  async command(workspace: string, command: string): Promise<CheckOutcome> {
    this.asked.push({ workspace, check: command });
    const failed = this.failing.has(command);
    return {
      check: `command: ${command}`,
      outcome: failed ? 'failed' : 'passed',
      message: failed ? `${command} exited 101` : `${command} exited 0`,
    };
  }

  async fileContains(workspace: string, path: string): Promise<CheckOutcome> {
    this.asked.push({ workspace, check: path });
    return { check: `files_contain: ${path}`, outcome: 'passed', message: `${path} has it` };
  }
}

/** Allows exactly `allowed`, as the sandbox would word a refusal. */
export function listPolicy(allowed: readonly string[]): ExpectCommandPolicy {
  return {
    allowedCommands: () => allowed,
    refusal: (_specialist, command) =>
      allowed.includes(command) ? null : `\`${command}\` is not allowlisted.\nmore detail`,
  };
}

/** What a test wires, and what it reads back. */
export interface MemoryBattery {
  readonly ports: BatterySessionPorts;
  readonly states: MemoryBatteryStates;
  readonly workspaces: MemoryWorkspaces[];
  readonly checks: ScriptedChecks;
  /** Every run asked for, in order. */
  readonly runs: RunRequest[];
  /** The most runs in progress at once. */
  readonly maxInFlight: () => number;
}

export interface MemoryBatteryOptions {
  /** How each model's runs end (by the model id the run is given); default: succeeded. */
  readonly script?: (model: string, task: string) => ScriptedRun;
  /** What the backends have; default: the models named in `catalog`. */
  readonly catalog?: readonly CatalogModel[];
  /** What a hosted endpoint of llm.backends has (kind openai), beside the local catalog. */
  readonly hosted?: readonly CatalogModel[];
  readonly aliases?: Readonly<Record<string, string>>;
  readonly failing?: readonly string[];
  readonly allowed?: readonly string[];
  readonly states?: MemoryBatteryStates;
  /** Milliseconds each run takes (a timer), so cells overlap. */
  readonly runMs?: number;
  /** Told when a run starts (e.g. to abort the battery). */
  readonly onRun?: (request: RunRequest) => void;
  readonly servers?: number;
  readonly queue?: BatteryQueue | null;
}

/** A session's ports, all in memory. */
export function memoryBattery(options: MemoryBatteryOptions = {}): MemoryBattery {
  const states = options.states ?? new MemoryBatteryStates();
  const workspaces: MemoryWorkspaces[] = [];
  const checks = new ScriptedChecks(options.failing);
  const runs: RunRequest[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let runIds = 0;
  let tick = Date.parse('2026-03-01T10:00:00Z');
  const catalog = options.catalog ?? [];
  const probes: BackendProbe[] = [
    {
      backend: 'lm_studio',
      baseUrl: 'http://lm.test:1234',
      ok: true,
      latencyMs: 1,
      error: undefined,
      models: catalog,
    },
    ...(options.hosted === undefined
      ? []
      : [
          {
            backend: 'openai' as const,
            name: 'cloud',
            baseUrl: 'https://api.test',
            ok: true,
            latencyMs: 1,
            error: undefined,
            models: options.hosted,
          },
        ]),
  ];
  const aliases = options.aliases ?? {};
  const newRunId = () => `run-${String(++runIds).padStart(3, '0')}`;
  const ports: BatterySessionPorts = {
    settings: {
      specialists: {
        rust: v.parse(SpecialistSchema, { builder: 'builtin:rust', workspace: WORKSPACE }),
        units: v.parse(SpecialistSchema, { builder: './packs/units.ts#buildPack' }),
      },
      source: '/mem/fabric.yaml',
      queued: options.queue !== undefined && options.queue !== null,
      servers: options.servers ?? 1,
    },
    runTask: async (request) => {
      runs.push(request);
      const id = request.runId ?? newRunId();
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        options.onRun?.(request);
        if (options.runMs !== undefined) await new Promise((resolve) => setTimeout(resolve, options.runMs));
        const script = options.script?.(request.model ?? '', request.task) ?? { status: 'succeeded' };
        if (request.signal.aborted && !('throws' in script))
          return runResult(request, id, { status: 'cancelled' });
        return runResult(request, id, script);
      } finally {
        inFlight--;
      }
    },
    expandModelAlias: (name) => aliases[name] ?? name,
    newRunId,
    models: { probe: async () => probes, refresh: () => {} },
    states,
    loadFile: () => Promise.reject(new Error('no battery files in memory')),
    paths: {
      kind: (path) => (path === WORKSPACE ? 'directory' : 'missing'),
      besideFile: (_file, path) => path,
      canonical: async (path) => `${path}.real`,
    },
    commands: listPolicy(options.allowed ?? ['cargo test']),
    checksFor: () => checks,
    workspacesFor: (workspace) => {
      const copies = new MemoryWorkspaces(workspace ?? '.');
      workspaces.push(copies);
      return copies;
    },
    controlStore: async () => null,
    queue: async () => options.queue ?? null,
    clock: {
      now: () => {
        tick += 1000;
        return new Date(tick);
      },
    },
  };
  return { ports, states, workspaces, checks, runs, maxInFlight: () => maxInFlight };
}

/** A battery file as `POST /v1/batteries` gives one: parsed, no file on disk. */
export function batteryOf(yaml: string): BatteryFile {
  return parseBatteryFile(yaml, '/mem/battery.yaml');
}

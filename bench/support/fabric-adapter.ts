/**
 * The one place the benches build a fabric (the composition root of SPEC §10), so a change in
 * how a fabric is made is one line here.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { type FabricConfig, loadConfig } from '../../src/config/load.ts';
import type { RunResult } from '../../src/domain/run-result.ts';
import { createFabric } from '../../src/composition/fabric.ts';
import { openBattery } from '../../src/composition/battery.ts';
import type { CellResult } from '../../src/application/battery/battery-types.ts';
import { EXAMPLE_PACK } from '../../test/support/fabric-cli.ts';

/** A fabric as the benches use it. */
export interface BenchFabric {
  readonly config: FabricConfig;
  /** Runs `task`; `workspace` (absolute) overrides the fabric's, so runs at once do not share one. */
  run(task: string, workspace?: string): Promise<RunResult>;
  /** Runs the battery file at `file` (absolute) to its end, as `fabric battery FILE` does. */
  battery(file: string): Promise<readonly CellResult[]>;
  /** Opens the control store and waits until it answers, as a server is before its runs come. */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The `units` specialist (packs/example) against `lmStudioUrl`, merged with `extra`. */
export function unitsConfig(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    version: 1,
    specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack` } },
    ...extra,
    // Every contender runs the same call on every step: the fabric must not take that for a stuck run.
    loop: { stuck_repeats: 100_000, ...((extra.loop as Record<string, unknown> | undefined) ?? {}) },
  };
}

/** Writes `config` to `<dir>/fabric.yaml` and returns its path. */
export async function writeConfig(dir: string, config: Record<string, unknown>): Promise<string> {
  const path = join(dir, 'fabric.yaml');
  await writeFile(path, stringify(config));
  return path;
}

/** The environment of a bench run: the fake as LM Studio, Ollama on a closed port. */
export function benchEnv(lmStudioUrl: string, runsDir: string): Record<string, string> {
  return { LM_STUDIO_URL: lmStudioUrl, OLLAMA_HOST: '127.0.0.1:9', FABRIC_RUNS_DIR: runsDir, NO_COLOR: '1' };
}

/** Loads the config file as the CLI does and builds a fabric on it; runs go to `specialist` (units). */
export async function openFabric(
  configPath: string,
  env: Record<string, string>,
  cwd: string,
  on: { readonly specialist?: string; readonly workspace?: string } = {},
): Promise<BenchFabric> {
  const config = await loadConfig({ configPath, cwd, env });
  const fabric = createFabric(config, { env });
  return {
    config,
    run: (task, workspace = on.workspace) =>
      fabric.run({
        specialist: on.specialist ?? 'units',
        task,
        ...(workspace === undefined ? {} : { workspace }),
        signal: new AbortController().signal,
      }),
    battery: async (file) => {
      const signal = new AbortController().signal;
      const session = await openBattery(fabric, { file, signal });
      return (await session.run(signal)).results;
    },
    ready: async () => {
      await (await fabric.controlStore())?.migrate();
    },
    close: () => fabric.close(),
  };
}

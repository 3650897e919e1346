import { cp, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '../../src/domain/run-events.ts';
import type { RunResult } from '../../src/domain/run-result.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { ROOT, type Sandbox, makeSandbox, runFabricInProcess } from './fabric-cli.ts';

/** A fresh copy of the example crate (without its target/), to run the rust specialist in. */
export async function exampleCrate(): Promise<string> {
  const workspace = await mkdtemp(join(tmpdir(), 'fabric-ws-'));
  await cp(join(ROOT, 'examples/compositor'), workspace, {
    recursive: true,
    filter: (source) => !source.includes('/target'),
  });
  return workspace;
}

/**
 * A sandbox whose rust specialist may run `cargo check` (its finish gate) and `commands`; `extra`
 * merged in.
 */
export function rustSandbox(
  extra: Record<string, unknown> = {},
  commands: readonly string[] = [],
): Promise<Sandbox> {
  return makeSandbox({
    ...extra,
    specialists: {
      rust: {
        builder: 'builtin:rust',
        sandbox: { allowed_commands: ['cargo check', ...commands], timeout_s: 120 },
      },
    },
  });
}

/** `fabric run -s rust --json` in-process; the result, the runlog's events and what was printed. */
export async function runRust(
  sandbox: Sandbox,
  workspace: string,
  env: Record<string, string>,
  task: string,
  /** More flags, e.g. `--model`. */
  args: readonly string[] = [],
) {
  const out = await runFabricInProcess(
    ['run', '-s', 'rust', '--workspace', workspace, '--json', '--config', sandbox.configPath, ...args, task],
    { env, cwd: sandbox.dir },
  );
  const run = JSON.parse(out.stdout) as RunResult;
  const events: RunEvent[] = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events;
  return { ...out, run, events };
}

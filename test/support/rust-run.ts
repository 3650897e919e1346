import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunEvent } from '../../src/domain/run-events.ts';
import type { RunResult } from '../../src/domain/run-result.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { afterEach } from 'vitest';
import { ROOT, type Sandbox, makeSandbox, runFabricInProcess, testEnv } from './fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';
import type { FakeLlmServerOptions } from './fake-llm-types.ts';

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

/**
 * `fabric run -s rust` on a fresh copy of the example crate against one fake LM Studio or Ollama,
 * the server, the sandbox and the workspace made for the test and removed after it (call inside
 * a `describe`: it registers an afterEach).
 */
export function rustOnFakes() {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
    server = undefined;
    sandbox = undefined;
    workspace = undefined;
  });
  return async (
    options: FakeLlmServerOptions & { flavor: 'lm_studio' | 'ollama' },
    task: string,
    args: readonly string[] = [],
  ) => {
    workspace = await exampleCrate();
    server = await startFakeLlmServer(options);
    sandbox = await rustSandbox();
    const env =
      options.flavor === 'ollama'
        ? { ...testEnv(sandbox, 'http://127.0.0.1:9'), OLLAMA_HOST: server.url }
        : testEnv(sandbox, server.url);
    return { ...(await runRust(sandbox, workspace, env, task, args)), server, sandbox, workspace };
  };
}

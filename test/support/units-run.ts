import { readFile } from 'node:fs/promises';
import type { RunEvent } from '../../src/domain/run-events.ts';
import type { RunResult } from '../../src/domain/run-result.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from './fabric-cli.ts';
import type { FakeLlmServer } from './fake-llm-server.ts';

/**
 * `fabric run -s units --json` in-process against a fake server acting as LM Studio or Ollama;
 * the result, the runlog's events and what was printed.
 */
export async function runUnits(
  sandbox: Sandbox,
  server: FakeLlmServer,
  flavor: 'lm_studio' | 'ollama',
  args: readonly string[] = [],
) {
  const env =
    flavor === 'ollama'
      ? { ...testEnv(sandbox, 'http://127.0.0.1:9'), OLLAMA_HOST: server.url }
      : testEnv(sandbox, server.url);
  const out = await runFabricInProcess(
    ['run', '-s', 'units', '--json', '--config', sandbox.configPath, ...args, 'convert 2 m to cm'],
    { env, cwd: sandbox.dir },
  );
  const result = JSON.parse(out.stdout) as RunResult;
  const events: RunEvent[] = result.runlog
    ? parseRunlog(await readFile(result.runlog, 'utf8'), result.runlog).events
    : [];
  return { ...out, result, events };
}

/**
 * `fabric run -s units --json` in-process with LM Studio and Ollama on a closed port, so that only
 * the backends of the sandbox's `llm.backends` answer; `env` adds variables (a key).
 */
export async function runUnitsOnBackends(
  sandbox: Sandbox,
  env: Record<string, string> = {},
  args: readonly string[] = [],
) {
  const out = await runFabricInProcess(
    ['run', '-s', 'units', '--json', '--config', sandbox.configPath, ...args, 'convert 2 m to cm'],
    { env: { ...testEnv(sandbox, 'http://127.0.0.1:9'), ...env }, cwd: sandbox.dir },
  );
  const result = JSON.parse(out.stdout) as RunResult;
  const events: RunEvent[] = result.runlog
    ? parseRunlog(await readFile(result.runlog, 'utf8'), result.runlog).events
    : [];
  return { ...out, result, events };
}

/** A sandbox whose config lists `backends` (with the fast retries of every test sandbox). */
export function backendsSandbox(backends: unknown[], llm: Record<string, unknown> = {}): Promise<Sandbox> {
  return makeSandbox({
    llm: {
      retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
      probe_timeout_ms: 1000,
      backends,
      ...llm,
    },
  });
}

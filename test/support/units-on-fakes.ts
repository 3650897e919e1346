import { afterEach } from 'vitest';
import { type Sandbox, makeSandbox } from './fabric-cli.ts';
import { startFakeLlamaServer, startFakeVllm } from './fake-llm-compat.ts';
import { type FakeLlmServer, startFakeLlmServer } from './fake-llm-server.ts';
import type { FakeLlmServerOptions } from './fake-llm-types.ts';
import { backendsSandbox, runUnits, runUnitsOnBackends } from './units-run.ts';

/** A backend entry of `llm.backends`, as a sandbox lists it. */
export type Backend = { kind: string; url: string };
type SandboxFor = (backend: Backend) => Promise<Sandbox>;

/**
 * `fabric run -s units` against one fake server, the server and its sandbox made for the test
 * and stopped and removed after it (call inside a `describe`: it registers an afterEach). Each
 * run answers what `runUnits` does, with the server and the sandbox.
 */
export function unitsOnFakes() {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    server = undefined;
    sandbox = undefined;
  });
  /**
   * The run on a server behind a backend of `kind`, alone in the sandbox's `llm.backends` unless
   * `sandboxFor` makes another; `args` adds flags (`--model`).
   */
  async function on(
    kind: string,
    started: Promise<FakeLlmServer>,
    sandboxFor: SandboxFor = (backend) => backendsSandbox([backend]),
    args: readonly string[] = [],
  ) {
    server = await started;
    sandbox = await sandboxFor({ kind, url: server.url });
    return { ...(await runUnitsOnBackends(sandbox, {}, args)), server, sandbox };
  }
  return {
    on,
    vllm: (options: Parameters<typeof startFakeVllm>[0], sandboxFor?: SandboxFor) =>
      on('vllm', startFakeVllm(options), sandboxFor),
    llama: (options: Parameters<typeof startFakeLlamaServer>[0], sandboxFor?: SandboxFor) =>
      on('llama_cpp', startFakeLlamaServer(options), sandboxFor),
    /** The run on a fake Ollama found as LM Studio and Ollama are (OLLAMA_HOST), with `--model`. */
    async ollama(options: Omit<FakeLlmServerOptions, 'flavor'>, model: string) {
      server = await startFakeLlmServer({ flavor: 'ollama', ...options });
      sandbox = await makeSandbox();
      return { ...(await runUnits(sandbox, server, 'ollama', ['--model', model])), server, sandbox };
    },
  };
}

import { execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'vitest';
import type { SandboxConfig, SpecialistConfig } from '../../../../src/config/schema.ts';
import type { FabricSettings, SpecialistPack, Tool, ToolContext } from '../../../../src/application/ports.ts';
import { outputText } from '../../../../src/application/run/tool-dispatch.ts';
import { ToolError } from '../../../../src/domain/errors.ts';
import { buildRustPack } from '../../../../src/infrastructure/packs/rust/rust-pack.ts';

/** A temp folder for one test file, removed by the returned cleanup. */
export async function tempDir(prefix: string): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Builds the real rust pack for a workspace, with sandbox and options overrides. */
export async function rustPack(
  workspace: string,
  sandbox: Partial<SandboxConfig> = {},
  options: Record<string, unknown> = {},
  settings: FabricSettings = { searxngUrl: undefined },
): Promise<SpecialistPack> {
  const config: SpecialistConfig = {
    builder: 'builtin:rust',
    description: '',
    network_allowed: false,
    allowed_hosts: [],
    mcp_servers: {},
    options,
    sandbox: {
      allowed_commands: ['cargo check', 'cargo test'],
      timeout_s: 120,
      network: false,
      output_limit_bytes: 64 * 1024,
      when_no_os_sandbox: 'argv_policy_only',
      mcp: false,
      read_only_paths: [],
      ...sandbox,
    },
  };
  return buildRustPack({ specialist: 'rust', config, workspace, settings });
}

/** A tool context with a fresh signal (or the given one). */
export function toolContext(signal: AbortSignal = new AbortController().signal): ToolContext {
  return { runId: 'test-run', step: 1, signal };
}

/** Finds a tool by name, validates the arguments like the loop does, and runs it. */
export async function call(
  pack: SpecialistPack,
  name: string,
  args: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<string> {
  const tool: Tool | undefined = pack.tools().find((candidate) => candidate.spec.name === name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const validation = tool.validate(args);
  if (!validation.ok) throw new ToolError(validation.message);
  return outputText(await tool.run(validation.value, toolContext(signal)));
}

/** Like `call`, for a tool that changes a file: the text and the diff it records. */
export async function callForDiff(
  pack: SpecialistPack,
  name: string,
  args: Record<string, unknown>,
): Promise<{ text: string; diff: string | undefined }> {
  const tool: Tool | undefined = pack.tools().find((candidate) => candidate.spec.name === name);
  if (tool === undefined) throw new Error(`no tool ${name}`);
  const validation = tool.validate(args);
  if (!validation.ok) throw new ToolError(validation.message);
  const output = await tool.run(validation.value, toolContext());
  return typeof output === 'string'
    ? { text: output, diff: undefined }
    : { text: output.text, diff: output.diff };
}

/** Awaits a refusal and checks it is a ToolError carrying a sandbox_violation for `rule`. */
export async function expectRefusal(
  promise: Promise<unknown>,
  rule: string | readonly string[],
): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  const toolError = error as ToolError;
  expect(toolError.securityEvent?.eventType).toBe('sandbox_violation');
  expect(Array.isArray(rule) ? rule : [rule]).toContain(toolError.securityEvent?.rule);
  expect(toolError.message.length).toBeGreaterThan(10);
  return toolError;
}

/** Awaits a plain tool error (no security event) and returns its message. */
export async function expectToolError(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return (error as ToolError).message;
}

/** Processes whose command line contains `marker` (pgrep -f), excluding pgrep itself. */
export function processesMatching(marker: string): string[] {
  try {
    return execFileSync('pgrep', ['-af', marker], { encoding: 'utf8' })
      .split('\n')
      .filter((line) => line.trim() !== '' && !line.includes('pgrep'));
  } catch {
    return [];
  }
}

/** Waits until no process matches `marker`, or gives up after `ms` and returns what is left. */
export async function waitForNoProcess(marker: string, ms = 3000): Promise<string[]> {
  const deadline = Date.now() + ms;
  let left = processesMatching(marker);
  while (left.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    left = processesMatching(marker);
  }
  return left;
}

/**
 * A battery cell's `expect` checks in its workspace: commands through the specialist's command
 * sandbox and allowlist (the same policy and OS sandbox as the model's `shell`), and file contents.
 */
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { ExpectChecks } from '../../application/battery/battery-ports.ts';
import type { CheckOutcome } from '../../application/battery/battery-types.ts';
import type { SandboxConfig } from '../../config/schema.ts';
import { errorMessage, ToolError } from '../../domain/errors.ts';
import { CommandSandbox } from '../sandbox/command-sandbox.ts';
import { isInside } from '../sandbox/is-inside.ts';
import {
  cargoTestFailures,
  cargoTestFailuresLine,
  formatCargoTestFailures,
} from '../cargo-checks/cargo-test-failures.ts';

/** Output of a failing command kept in the check's message. */
const SHOWN_OUTPUT = 2000;

/** Runs checks with one specialist's sandbox settings. */
export class SandboxExpectChecks implements ExpectChecks {
  readonly #sandbox: SandboxConfig;

  constructor(sandbox: SandboxConfig) {
    this.#sandbox = sandbox;
  }

  async command(workspace: string, command: string, signal: AbortSignal): Promise<CheckOutcome> {
    const check = `command: ${command}`;
    const sandbox = new CommandSandbox({
      root: await realpath(workspace),
      allowedCommands: this.#sandbox.allowed_commands,
      timeoutMs: this.#sandbox.timeout_s * 1000,
      network: this.#sandbox.network,
      outputLimitBytes: this.#sandbox.output_limit_bytes,
      whenNoOsSandbox: this.#sandbox.when_no_os_sandbox,
    });
    try {
      const result = await sandbox.run(command, signal);
      if (result.end === 'exited' && result.exitCode === 0) {
        return { check, outcome: 'passed', message: `exit 0 in ${Math.round(result.durationMs)} ms` };
      }
      const how =
        result.end === 'exited'
          ? `exit ${result.exitCode}`
          : result.end === 'spawn_failed'
            ? `could not start: ${result.spawnError}`
            : result.end;
      const output = `${result.stdout}\n${result.stderr}`.trim();
      // Failing tests: each one's panic location and message, which the output's end lacks.
      const failures = cargoTestFailures(output);
      if (failures !== null) {
        return {
          check,
          outcome: 'failed',
          message: `${how}: ${cargoTestFailuresLine(failures)}\n${formatCargoTestFailures(failures)}\n\n${output.slice(-SHOWN_OUTPUT)}`,
        };
      }
      // Otherwise the lines that say what failed come first (a compiler error, a crash).
      const telling = output
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => /FAILED|panicked|^error/.test(line))
        .slice(0, 4);
      const headline = telling.length === 0 ? how : `${how}: ${telling.join('; ')}`;
      return {
        check,
        outcome: 'failed',
        message: `${headline}${output === '' ? '' : `\n${output.slice(-SHOWN_OUTPUT)}`}`,
      };
    } catch (error) {
      const message = error instanceof ToolError ? error.message : `Unexpected error: ${errorMessage(error)}`;
      return { check, outcome: 'failed', message };
    }
  }

  async fileContains(workspace: string, file: string, text: string): Promise<CheckOutcome> {
    const check = `files_contain: ${file}`;
    const root = await realpath(workspace);
    let content: string;
    try {
      const target = await realpath(path.join(root, file));
      if (!isInside(root, target)) {
        return { check, outcome: 'failed', message: `${file} leads out of the workspace; not read` };
      }
      content = await readFile(target, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return {
        check,
        outcome: 'failed',
        message:
          code === 'ENOENT'
            ? `${file} does not exist`
            : `${file} cannot be read (${code ?? errorMessage(error)})`,
      };
    }
    return content.includes(text)
      ? { check, outcome: 'passed', message: `${file} contains ${JSON.stringify(text)}` }
      : { check, outcome: 'failed', message: `${file} does not contain ${JSON.stringify(text)}` };
  }
}

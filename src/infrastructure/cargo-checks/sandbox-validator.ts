import { realpath } from 'node:fs/promises';
import type {
  ClippyCount,
  ClippyCounter,
  ValidationReport,
  Validator,
} from '../../application/daemon/daemon-ports.ts';
import type { SandboxConfig } from '../../config/schema.ts';
import { errorMessage, FabricError } from '../../domain/errors.ts';
import { splitCommand } from '../sandbox/argv.ts';
import { checkCommand, parseAllowlist } from '../sandbox/command-policy.ts';
import { type CommandResult, CommandSandbox } from '../sandbox/command-sandbox.ts';
import { recordPathsIn } from '../sandbox/record-paths.ts';
import { cargoTestFailures, formatCargoTestFailures } from './cargo-test-failures.ts';
import { CLIPPY_COMMAND, CLIPPY_OUTPUT_LIMIT, clippyCount } from './clippy-count.ts';

/** Output kept per command in the report (its tail: where cargo puts the errors and the summary). */
const REPORT_TAIL = 6000;
/** Lines of a failed command's output in the summary when they are not test failures (a build error). */
const SUMMARY_LINES = 12;

/** What the validator is built from. */
export interface SandboxValidatorOptions {
  readonly repo: string;
  /** The validation commands, e.g. `cargo build`, `cargo test`. */
  readonly commands: readonly string[];
  /** The specialist's sandbox, as `specialistSandbox` gives it (its allowlist applies to the validation commands too). */
  readonly sandbox: SandboxConfig;
  /** The specialist's pack options (`bwrap_path`, `cargo_home`, `rustup_home`). */
  readonly options?: Readonly<Record<string, unknown>>;
  readonly runsDir: string;
  readonly configFile: string;
}

/**
 * Runs the daemon's validation commands through the rust pack's command sandbox: the same argv
 * policy and allowlist as `shell`, bubblewrap where it works, a scrubbed environment and limits.
 * Counts clippy's warnings through the same sandbox, when the allowlist allows clippy.
 */
export class SandboxValidator implements Validator, ClippyCounter {
  readonly #sandbox: CommandSandbox;
  readonly #commands: readonly string[];
  /** Why clippy may not run here; undefined when the allowlist allows it. */
  readonly #clippyRefused: string | undefined;

  private constructor(
    sandbox: CommandSandbox,
    commands: readonly string[],
    clippyRefused: string | undefined,
  ) {
    this.#sandbox = sandbox;
    this.#commands = commands;
    this.#clippyRefused = clippyRefused;
  }

  /** Builds the validator; a command the sandbox would refuse is a `usage` error now, not at the first task. */
  static async create(options: SandboxValidatorOptions): Promise<SandboxValidator> {
    const config = options.sandbox;
    const root = await realpath(options.repo);
    const allowed = parseAllowlist(config.allowed_commands);
    if (options.commands.length === 0) {
      throw new FabricError(
        'usage',
        'daemon.validate is empty: list the commands that check a task (e.g. cargo build, cargo test).',
      );
    }
    for (const command of options.commands) {
      try {
        checkCommand(splitCommand(command), { allowed, root });
      } catch (error) {
        throw new FabricError(
          'usage',
          `The validation command "${command}" is refused by the specialist's sandbox: ${errorMessage(error)} ` +
            `Allowed: ${config.allowed_commands.join(', ') || '(none)'}. Change daemon.validate or sandbox.allowed_commands.`,
        );
      }
    }
    const packOptions = options.options ?? {};
    const text = (key: string) =>
      typeof packOptions[key] === 'string' ? (packOptions[key] as string) : undefined;
    const sandbox = new CommandSandbox({
      root,
      allowedCommands: config.allowed_commands,
      timeoutMs: config.timeout_s * 1000,
      network: config.network,
      outputLimitBytes: config.output_limit_bytes,
      whenNoOsSandbox: config.when_no_os_sandbox,
      bwrapPath: text('bwrap_path'),
      toolchain: { cargoHome: text('cargo_home'), rustupHome: text('rustup_home') },
      record: await recordPathsIn(root, {
        searxngUrl: undefined,
        runsDir: options.runsDir,
        configFile: options.configFile,
      }),
    });
    let clippyRefused: string | undefined;
    try {
      checkCommand(CLIPPY_COMMAND, { allowed, root });
    } catch {
      // The policy's own message is written for the model; this one is for a person.
      clippyRefused = `cargo clippy is not in the specialist's sandbox.allowed_commands (${config.allowed_commands.join(', ') || 'none'})`;
    }
    return new SandboxValidator(sandbox, options.commands, clippyRefused);
  }

  /** Clippy's warnings on the tree as it is; null and why when clippy is not allowed or fails. */
  async countClippy(signal: AbortSignal): Promise<ClippyCount> {
    if (this.#clippyRefused !== undefined) return { warnings: null, reason: this.#clippyRefused };
    try {
      // Checked against the allowlist above; trusted only for the larger output cap its JSON needs.
      return clippyCount(await this.#sandbox.runTrusted(CLIPPY_COMMAND, signal, CLIPPY_OUTPUT_LIMIT));
    } catch (error) {
      return { warnings: null, reason: `cargo clippy was not run: ${errorMessage(error)}` };
    }
  }

  async validate(signal: AbortSignal): Promise<ValidationReport> {
    const sections: string[] = [];
    let testsPassed: number | null = null;
    for (const configured of this.#commands) {
      const command = everyTest(configured);
      let result: CommandResult;
      try {
        result = await this.#sandbox.run(command, signal);
      } catch (error) {
        const section = `$ ${command}\nnot run: ${errorMessage(error)}`;
        sections.push(section);
        return { ok: false, report: sections.join('\n\n'), summary: section, testsPassed, failedTests: null };
      }
      const output = `${result.stdout}\n${result.stderr}`.trim();
      const passed = countPassed(output);
      if (passed !== null) testsPassed = (testsPassed ?? 0) + passed;
      const end = result.end === 'exited' ? `exit code ${result.exitCode}` : result.end;
      if (result.end === 'exited' && result.exitCode === 0) {
        sections.push(`$ ${command}\n${end}`);
        continue;
      }
      // The failing tests and their messages first: the tail alone loses them.
      const failures = cargoTestFailures(output);
      const described = failures === null ? null : formatCargoTestFailures(failures);
      sections.push(
        `$ ${command}\n${end}\n${described === null ? tail(output) : `${described}\n\nThe output's end:\n${tail(output)}`}`,
      );
      const summary = `$ ${command}: ${end}\n${described ?? lastLines(output, SUMMARY_LINES)}`;
      // Test failures can be judged against the baseline; anything else (a build error) cannot.
      const failedTests = failures === null ? null : failures.failed.map((test) => test.name);
      // Tests of a crate that does not build say nothing new.
      return { ok: false, report: sections.join('\n\n'), summary, testsPassed, failedTests };
    }
    return { ok: true, report: sections.join('\n\n'), summary: '', testsPassed, failedTests: [] };
  }
}

/**
 * `cargo test` runs every test binary even when one fails (`--no-fail-fast`): judged against the
 * baseline, a test red at HEAD in the unit tests must not hide a regression in the integration
 * tests after them.
 */
export function everyTest(command: string): string {
  if (command.includes('--no-fail-fast')) return command;
  return command.replace(/^(\s*cargo\s+test)(?=\s|$)/, '$1 --no-fail-fast');
}

/** Sums `test result: ok. 3 passed; ...` lines of `cargo test`; null when there are none. */
export function countPassed(output: string): number | null {
  const matches = [...output.matchAll(/test result: \w+\. (\d+) passed/g)];
  return matches.length === 0 ? null : matches.reduce((sum, m) => sum + Number(m[1]), 0);
}

function lastLines(text: string, count: number): string {
  const lines = text.split('\n');
  return lines.length <= count ? text : ['…', ...lines.slice(-count)].join('\n');
}

function tail(text: string): string {
  return text.length <= REPORT_TAIL
    ? text
    : `[… ${text.length - REPORT_TAIL} earlier characters]\n${text.slice(-REPORT_TAIL)}`;
}

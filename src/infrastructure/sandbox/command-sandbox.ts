import { constants } from 'node:fs';
import { access, lstat, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ToolError } from '../../domain/errors.ts';
import { splitCommand } from './argv.ts';
import { type Bwrap, bwrapArgs, probeBwrap, SANDBOX_CARGO_HOME, SANDBOX_HOME } from './bwrap.ts';
import { childEnv } from './child-env.ts';
import { checkCommand, parseAllowlist } from './command-policy.ts';
import { restoreGuarded, snapshotGuarded } from './protected-paths.ts';
import type { RecordPath } from './record-paths.ts';
import { type RunOutcome, runCommand } from './run-command.ts';
import { discoverToolchain, fixedPath, type Toolchain, type ToolchainHints } from './toolchain.ts';
import { sandboxViolation } from './violation.ts';

/** How commands of one workspace are contained. */
export interface CommandSandboxOptions {
  /** The workspace's real path. */
  readonly root: string;
  readonly allowedCommands: readonly string[];
  readonly timeoutMs: number;
  readonly network: boolean;
  readonly outputLimitBytes: number;
  readonly whenNoOsSandbox: 'refuse' | 'argv_policy_only';
  /** Where bubblewrap is; by default a fixed list of system paths. */
  readonly bwrapPath?: string | undefined;
  readonly toolchain?: ToolchainHints | undefined;
  /** Told once per process when bubblewrap is unavailable. */
  readonly onNotice?: ((message: string) => void) | undefined;
  /** The run record inside the workspace (runs directory, config file): read-only to commands. */
  readonly record?: readonly RecordPath[] | undefined;
}

/** A finished command: its bounded output and how it was contained. */
export interface CommandResult extends RunOutcome {
  readonly argv: readonly string[];
  readonly osSandbox: 'bwrap' | 'none';
  /** Set on the first command run without an OS sandbox. */
  readonly notice: string | undefined;
}

interface Environment {
  readonly toolchain: Toolchain;
  readonly bwrap: Bwrap | undefined;
  readonly unavailable: string | undefined;
}

/** Root-level workspace entries mounted read-only inside bubblewrap when they exist. */
const READ_ONLY_ENTRIES = ['.cargo', 'rust-toolchain', 'rust-toolchain.toml', '.git'];

let noticeGiven = false;

/**
 * Runs commands for one workspace: argv policy first, then bubblewrap when it works here (or
 * the configured fallback), a from-scratch environment, limits, and a check afterwards that no
 * toolchain or git file of the workspace was created or changed.
 */
export class CommandSandbox {
  private readonly options: CommandSandboxOptions;
  private readonly allowed: string[][];
  private environment: Promise<Environment> | undefined;

  constructor(options: CommandSandboxOptions) {
    this.options = options;
    this.allowed = parseAllowlist(options.allowedCommands);
  }

  /**
   * Parses a model's command string, checks it against the policy, and runs it. `approved`: the
   * exact argv a person approved (SPEC §19), allowed for this call as an allowlist entry would be.
   */
  async run(command: string, signal: AbortSignal, approved?: readonly string[]): Promise<CommandResult> {
    const argv = splitCommand(command);
    const allowed =
      approved !== undefined &&
      approved.length === argv.length &&
      approved.every((word, i) => argv[i] === word)
        ? [...this.allowed, [...approved]]
        : this.allowed;
    checkCommand(argv, { allowed, root: this.options.root });
    return this.execute(argv, signal, this.options.outputLimitBytes);
  }

  /** Runs a command the fabric itself composed (cargo_check, the finish gate): no allowlist. */
  async runTrusted(
    argv: readonly string[],
    signal: AbortSignal,
    outputLimitBytes: number,
  ): Promise<CommandResult> {
    checkCommand(argv, { allowed: [[argv[0] ?? '']], root: this.options.root });
    return this.execute(argv, signal, outputLimitBytes);
  }

  /** Whether commands run inside bubblewrap here, and if not, why. */
  async describe(): Promise<{ readonly osSandbox: 'bwrap' | 'none'; readonly reason: string | undefined }> {
    const environment = await this.prepare();
    return { osSandbox: environment.bwrap === undefined ? 'none' : 'bwrap', reason: environment.unavailable };
  }

  private prepare(): Promise<Environment> {
    this.environment ??= (async () => {
      const [toolchain, probe] = await Promise.all([
        discoverToolchain(this.options.toolchain),
        probeBwrap(this.options.bwrapPath),
      ]);
      return probe.ok
        ? { toolchain, bwrap: probe.bwrap, unavailable: undefined }
        : { toolchain, bwrap: undefined, unavailable: probe.reason };
    })();
    return this.environment;
  }

  private async execute(
    argv: readonly string[],
    signal: AbortSignal,
    outputLimitBytes: number,
  ): Promise<CommandResult> {
    const { root } = this.options;
    const environment = await this.prepare();
    let notice: string | undefined;
    if (environment.bwrap === undefined) {
      if (this.options.whenNoOsSandbox === 'refuse') {
        throw sandboxViolation(
          `Commands are refused: no OS sandbox is available (${environment.unavailable}), and ` +
            'sandbox.when_no_os_sandbox is "refuse". Install bubblewrap, or set it to "argv_policy_only".',
          'no_os_sandbox',
          argv,
        );
      }
      if (!noticeGiven) {
        noticeGiven = true;
        notice =
          `No OS sandbox: ${environment.unavailable}. Commands run with the argv policy only, so build ` +
          'scripts and proc-macros are NOT contained. Install bubblewrap, or set ' +
          'sandbox.when_no_os_sandbox: refuse.';
        this.options.onNotice?.(notice);
      }
    }
    const program = await findProgram(argv[0]!, environment.toolchain);
    // Without bubblewrap nothing mounts the config file read-only: it is put back like .cargo/.
    const extraGuarded = (this.options.record ?? [])
      .filter((entry) => entry.what === 'config_file')
      .map((entry) => path.relative(root, entry.absolute));
    const before = await snapshotGuarded(root, extraGuarded);
    const privateDir = environment.bwrap === undefined ? await makePrivateDir() : undefined;
    let outcome: RunOutcome;
    try {
      const dirs =
        privateDir === undefined
          ? { home: SANDBOX_HOME, cargoHome: SANDBOX_CARGO_HOME, tmp: '/tmp' }
          : {
              home: path.join(privateDir, 'home'),
              cargoHome: path.join(privateDir, 'cargo-home'),
              tmp: path.join(privateDir, 'tmp'),
            };
      const env = childEnv(root, environment.toolchain, dirs, this.options.network);
      const base = { cwd: root, env, timeoutMs: this.options.timeoutMs, outputLimitBytes, signal };
      const floodLimitBytes = Math.max(32 * 1024 * 1024, outputLimitBytes * 16);
      if (environment.bwrap === undefined) {
        outcome = await runCommand({ ...base, file: program, args: argv.slice(1), floodLimitBytes });
      } else {
        const layout = {
          root,
          toolchain: environment.toolchain,
          network: this.options.network,
          readOnlyInWorkspace: await existingEntries(
            root,
            (this.options.record ?? []).map((entry) => path.relative(root, entry.absolute)),
          ),
        };
        const args = await bwrapArgs(environment.bwrap, layout, [program, ...argv.slice(1)]);
        outcome = await runCommand({ ...base, file: environment.bwrap.path, args, floodLimitBytes });
      }
    } finally {
      if (privateDir !== undefined) await rm(privateDir, { recursive: true, force: true });
    }
    const repaired = await restoreGuarded(root, before, extraGuarded);
    if (repaired.length > 0) {
      throw sandboxViolation(
        `The command changed files the toolchain or git would execute (${repaired.join(', ')}); they were ` +
          `restored. Output:\n${outcome.stdout}\n${outcome.stderr}`,
        'protected_file_modified',
        argv,
        repaired,
      );
    }
    return { ...outcome, argv, osSandbox: environment.bwrap === undefined ? 'none' : 'bwrap', notice };
  }
}

async function findProgram(name: string, toolchain: Toolchain): Promise<string> {
  for (const dir of fixedPath(toolchain).split(':')) {
    const candidate = path.join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this directory.
    }
  }
  throw new ToolError(`\`${name}\` is not installed on this machine (looked in ${fixedPath(toolchain)}).`);
}

async function existingEntries(root: string, extra: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  for (const entry of [...READ_ONLY_ENTRIES, ...extra]) {
    const absolute = path.join(root, entry);
    const parent = await lstat(path.dirname(absolute)).catch(() => undefined);
    const info = await lstat(absolute).catch(() => undefined);
    // A link would make bubblewrap mount whatever it points at; the post-run check covers links.
    if (info !== undefined && !info.isSymbolicLink() && parent?.isSymbolicLink() === false)
      found.push(absolute);
  }
  return found;
}

async function makePrivateDir(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'fabric-cmd-'));
  for (const sub of ['home', 'cargo-home', 'tmp']) await mkdir(path.join(dir, sub), { mode: 0o700 });
  return dir;
}

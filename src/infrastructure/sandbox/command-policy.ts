import path from 'node:path';
import { isInside } from './path-scope.ts';
import { sandboxViolation } from './violation.ts';
import { showArgv } from '../../domain/show-argv.ts';

/** What a command may be: the specialist's allowlist, and the workspace it must stay in. */
export interface CommandPolicy {
  /** Allowlist entries as words: `['cargo', 'check']` allows `cargo check ...`; `['ls']` allows `ls ...`. */
  readonly allowed: readonly (readonly string[])[];
  readonly root: string;
}

/** Parses `sandbox.allowed_commands` entries (`"cargo check"`) into words. */
export function parseAllowlist(entries: readonly string[]): string[][] {
  return entries
    .map((entry) => entry.trim().split(/\s+/))
    .filter((words) => words.length > 0 && words[0] !== '');
}

/** cargo subcommands that run, install or publish, whatever the allowlist says (`r` is run's alias). */
const FORBIDDEN_CARGO_SUBCOMMANDS = new Set([
  'run',
  'r',
  'install',
  'uninstall',
  'publish',
  'login',
  'logout',
  'owner',
  'yank',
]);

/** cargo flags that load code or configuration from elsewhere. */
const FORBIDDEN_CARGO_FLAGS = ['--config', '-Z', '--unstable-features'];

/** cargo flags whose value is a path; it must stay in the workspace. */
const CARGO_PATH_FLAGS = [
  '--manifest-path',
  '--target-dir',
  '--artifact-dir',
  '--out-dir',
  '--lockfile-path',
  '-C',
];

/**
 * Checks a parsed argv against the policy and throws a refusal naming the rule. The allowlist
 * is matched word for word on argv (never on a string prefix); programs are names found on the
 * fixed PATH, never paths; flags that load configuration, change toolchain, or point outside
 * the workspace are refused; every path-like argument must resolve inside the workspace.
 */
export function checkCommand(argv: readonly string[], policy: CommandPolicy): void {
  const [program] = argv;
  // Shown in refusals a person may read too (`fabric policy check`): quoted, controls escaped.
  const shown = showArgv(argv);
  if (program === undefined) throw sandboxViolation('The command is empty.', 'shell_syntax', argv);
  if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(program)) {
    throw sandboxViolation(
      `\`${program}\` sets an environment variable; the environment is fixed by the sandbox. Run the command alone.`,
      'not_allowlisted',
      argv,
    );
  }
  if (program.includes('/') || program.includes('\\')) {
    throw sandboxViolation(
      `Programs are run by name from a fixed PATH, not by path: use e.g. \`cargo\`, not \`${program}\`.`,
      'program_path',
      argv,
    );
  }
  const allowed = policy.allowed.some(
    (words) => words.length <= argv.length && words.every((word, index) => argv[index] === word),
  );
  if (!allowed) {
    const list = policy.allowed.map((words) => words.join(' ')).join(', ') || '(none)';
    throw sandboxViolation(
      `\`${shown}\` is not an allowed command. Allowed (with their own arguments): ${list}. ` +
        'Use the cargo_check tool to compile-check the workspace.',
      'not_allowlisted',
      argv,
    );
  }
  if (program === 'cargo') checkCargo(argv, policy);
  for (const arg of argv.slice(1)) checkPathArgument(arg, argv, policy.root);
}

function checkCargo(argv: readonly string[], policy: CommandPolicy): void {
  const passthrough = argv.indexOf('--');
  const cargoArgs = passthrough === -1 ? argv.slice(1) : argv.slice(1, passthrough);
  const subcommand = cargoSubcommand(cargoArgs);
  for (const arg of cargoArgs) {
    if (arg.startsWith('+')) {
      throw sandboxViolation(
        `\`${arg}\` selects another toolchain; the workspace's own toolchain is used.`,
        'forbidden_flag',
        argv,
      );
    }
    const flag = arg.split('=')[0]!;
    if (
      FORBIDDEN_CARGO_FLAGS.some(
        (forbidden) => flag === forbidden || (forbidden === '-Z' && arg.startsWith('-Z')),
      )
    ) {
      throw sandboxViolation(
        `\`${flag}\` loads configuration or unstable behaviour into cargo and is not allowed.`,
        'forbidden_flag',
        argv,
      );
    }
  }
  if (subcommand !== undefined && FORBIDDEN_CARGO_SUBCOMMANDS.has(subcommand)) {
    throw sandboxViolation(
      `\`cargo ${subcommand}\` runs, installs or publishes code and is never allowed here; ` +
        'use `cargo test` for behaviour and cargo_check for compilation.',
      'forbidden_subcommand',
      argv,
    );
  }
  for (let index = 0; index < cargoArgs.length; index++) {
    const arg = cargoArgs[index]!;
    const [flag, inline] = splitFlag(arg);
    if (!CARGO_PATH_FLAGS.includes(flag)) continue;
    const value = inline ?? cargoArgs[index + 1];
    if (value === undefined) continue;
    const resolved = path.resolve(policy.root, value);
    if (!isInside(policy.root, resolved)) {
      throw sandboxViolation(
        `\`${flag} ${value}\` points outside the workspace.`,
        'path_argument_outside',
        argv,
        resolved,
      );
    }
  }
}

/**
 * Any argument that looks like a path (absolute, home-relative, or climbing with `..`), alone or
 * as the value of `--flag=value` or `-o/path`, must resolve inside the workspace. This is what
 * stops `cargo test -- --logfile /elsewhere` or `rustc ... --emit=link=/elsewhere`.
 */
function checkPathArgument(arg: string, argv: readonly string[], root: string): void {
  const pieces = arg.split('=');
  if (/^-[a-zA-Z]\//.test(arg)) pieces.push(arg.slice(2));
  for (const piece of pieces) {
    if (!looksLikePath(piece)) continue;
    if (piece.startsWith('~')) {
      throw sandboxViolation(
        `\`${arg}\` names a home directory; stay in the workspace.`,
        'path_argument_outside',
        argv,
      );
    }
    const resolved = path.resolve(root, piece);
    if (!isInside(root, resolved)) {
      throw sandboxViolation(
        `\`${arg}\` points outside the workspace; use paths relative to the workspace root.`,
        'path_argument_outside',
        argv,
        resolved,
      );
    }
  }
}

function looksLikePath(piece: string): boolean {
  return (
    piece.startsWith('/') || piece.startsWith('~') || piece === '..' || /(^|[\\/])\.\.([\\/]|$)/.test(piece)
  );
}

/** cargo's global options that take a separate value: `cargo --color always run` runs `run`. */
const CARGO_GLOBAL_VALUE_FLAGS = new Set(['--color', '--explain', '--config', '-C', '-Z']);

/** The subcommand: the first word that is neither a global flag nor a global flag's value. */
function cargoSubcommand(cargoArgs: readonly string[]): string | undefined {
  for (let index = 0; index < cargoArgs.length; index++) {
    const arg = cargoArgs[index]!;
    if (CARGO_GLOBAL_VALUE_FLAGS.has(arg)) {
      index += 1;
      continue;
    }
    if (!arg.startsWith('-')) return arg;
  }
  return undefined;
}

function splitFlag(arg: string): [string, string | undefined] {
  const at = arg.indexOf('=');
  return at === -1 ? [arg, undefined] : [arg.slice(0, at), arg.slice(at + 1)];
}

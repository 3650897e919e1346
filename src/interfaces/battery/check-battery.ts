/**
 * A battery file against the config, before anything runs (SPEC §12): the specialist exists,
 * the workspace does, and every `expect` command is one the specialist's sandbox would run.
 * Any problem is `config_invalid` naming the field and its line (exit 2).
 */
import { type Stats, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { type BatteryFile, type KnownSpecialists, batteryProblems } from '../../config/battery-file.ts';
import type { FabricConfig } from '../../config/load.ts';
import { ToolError } from '../../domain/errors.ts';
import { specialistSandbox } from '../../infrastructure/packs/rust/rust-sandbox.ts';
import { splitCommand } from '../../infrastructure/sandbox/argv.ts';
import { checkCommand, parseAllowlist } from '../../infrastructure/sandbox/command-policy.ts';

/** The workspace the battery's cells copy: the file's, else the specialist's. */
export function batteryWorkspace(battery: BatteryFile, config: FabricConfig): string | undefined {
  return battery.workspace ?? config.specialists[battery.specialist]?.workspace;
}

/**
 * The config's side of a battery file, for `loadBatteryFile`/`parseBatteryFile`: the specialists
 * it may name and its checks against them, so every problem comes in one error (issue 20).
 */
export function batteryAgainst(config: FabricConfig): KnownSpecialists {
  return {
    names: Object.keys(config.specialists),
    source: config.source,
    check: (raw, source, add) => configProblems(raw, source, config, add),
  };
}

/** Throws `config_invalid` listing every problem of the file against the config. */
export async function checkBattery(battery: BatteryFile, config: FabricConfig): Promise<void> {
  const problems: { path: (string | number)[]; message: string }[] = [];
  if (config.specialists[battery.specialist] === undefined) {
    const known = Object.keys(config.specialists).join(', ') || '(none)';
    problems.push({
      path: ['specialist'],
      message: `no specialist "${battery.specialist}" in ${config.source} (configured: ${known})`,
    });
  }
  configProblems(battery as unknown as Record<string, unknown>, battery.source, config, (path, message) =>
    problems.push({ path: [...path], message }),
  );
  if (problems.length > 0) throw batteryProblems(battery, problems);
}

/**
 * The workspace exists and every `expect` command is one the specialist's sandbox would run,
 * read from the file's content as it is (a field of the wrong shape is the schema's problem, and
 * skipped here); commands are checked only when the specialist exists.
 */
function configProblems(
  raw: Readonly<Record<string, unknown>>,
  source: string,
  config: FabricConfig,
  add: (path: readonly (string | number)[], message: string) => void,
): void {
  const name = typeof raw.specialist === 'string' ? raw.specialist : undefined;
  const specialist = name === undefined ? undefined : config.specialists[name];
  const own = typeof raw.workspace === 'string' && raw.workspace !== '' ? raw.workspace : undefined;
  const workspace = own !== undefined ? resolve(dirname(source), own) : specialist?.workspace;
  if (workspace !== undefined) {
    let info: Stats | undefined;
    try {
      info = statSync(workspace);
    } catch {
      info = undefined;
    }
    if (info === undefined || !info.isDirectory()) {
      add(
        ['workspace'],
        `${workspace} ${info === undefined ? 'does not exist' : 'is not a directory'}${own === undefined ? ` (the workspace of specialist "${name}")` : ' (paths are relative to the battery file)'}`,
      );
    }
  } else if (specialist?.builder === 'builtin:rust') {
    add(['workspace'], 'missing: the rust specialist works in a workspace; name one');
  }
  const tasks = Array.isArray(raw.tasks) ? (raw.tasks as unknown[]) : [];
  const sandbox = specialist === undefined ? undefined : specialistSandbox(specialist);
  const allowed = sandbox === undefined ? undefined : parseAllowlist(sandbox.allowed_commands);
  const shown =
    sandbox === undefined || sandbox.allowed_commands.length === 0
      ? 'none'
      : sandbox.allowed_commands.join(', ');
  tasks.forEach((task, t) => {
    const expect = isRecord(task) && isRecord(task.expect) ? task.expect : {};
    const commands = Array.isArray(expect.commands) ? (expect.commands as unknown[]) : [];
    const files = isRecord(expect.files_contain) ? Object.keys(expect.files_contain) : [];
    if ((commands.length > 0 || files.length > 0) && workspace === undefined) {
      add(
        ['tasks', t, 'expect'],
        'commands and files_contain check a workspace, and this battery has none; add `workspace:`',
      );
    }
    if (allowed === undefined) return;
    commands.forEach((command, c) => {
      if (typeof command !== 'string' || command === '') return;
      try {
        checkCommand(splitCommand(command), { allowed, root: workspace ?? source });
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        add(
          ['tasks', t, 'expect', 'commands', c],
          `${error.message.split('\n')[0]} (specialist "${name}" allows: ${shown}; see sandbox.allowed_commands)`,
        );
      }
    });
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

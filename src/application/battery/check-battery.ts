/**
 * A battery file against the config, before anything runs (SPEC §12): the specialist exists,
 * the workspace does, and every `expect` command is one the specialist's sandbox would run.
 * Any problem is `config_invalid` naming the field and its line (exit 2).
 */
import { type BatteryFile, type KnownSpecialists, batteryProblems } from '../../config/battery-file.ts';
import type { BatteryPaths, BatterySettings, ExpectCommandPolicy } from './session-ports.ts';

/** The workspace the battery's cells copy: the file's, else the specialist's. */
export function batteryWorkspace(
  battery: BatteryFile,
  settings: Pick<BatterySettings, 'specialists'>,
): string | undefined {
  return battery.workspace ?? settings.specialists[battery.specialist]?.workspace;
}

/** What the check reads besides the file. */
export interface CheckBatteryPorts {
  readonly settings: Pick<BatterySettings, 'specialists' | 'source'>;
  readonly paths: Pick<BatteryPaths, 'kind' | 'besideFile'>;
  readonly commands: ExpectCommandPolicy;
}

/**
 * The config's side of a battery file, for loading or parsing it: the specialists it may name and
 * its checks against them, so every problem comes in one error.
 */
export function batteryAgainst(ports: CheckBatteryPorts): KnownSpecialists {
  return {
    names: Object.keys(ports.settings.specialists),
    source: ports.settings.source,
    check: (raw, source, add) => configProblems(raw, source, ports, add),
  };
}

/** Throws `config_invalid` listing every problem of the file against the config. */
export async function checkBattery(battery: BatteryFile, ports: CheckBatteryPorts): Promise<void> {
  const { settings } = ports;
  const problems: { path: (string | number)[]; message: string }[] = [];
  if (settings.specialists[battery.specialist] === undefined) {
    const known = Object.keys(settings.specialists).join(', ') || '(none)';
    problems.push({
      path: ['specialist'],
      message: `no specialist "${battery.specialist}" in ${settings.source} (configured: ${known})`,
    });
  }
  configProblems(battery as unknown as Record<string, unknown>, battery.source, ports, (path, message) =>
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
  { settings, paths, commands }: CheckBatteryPorts,
  add: (path: readonly (string | number)[], message: string) => void,
): void {
  const name = typeof raw.specialist === 'string' ? raw.specialist : undefined;
  const specialist = name === undefined ? undefined : settings.specialists[name];
  const own = typeof raw.workspace === 'string' && raw.workspace !== '' ? raw.workspace : undefined;
  const workspace = own !== undefined ? paths.besideFile(source, own) : specialist?.workspace;
  if (workspace !== undefined) {
    const kind = paths.kind(workspace);
    if (kind !== 'directory') {
      add(
        ['workspace'],
        `${workspace} ${kind === 'missing' ? 'does not exist' : 'is not a directory'}${own === undefined ? ` (the workspace of specialist "${name}")` : ' (paths are relative to the battery file)'}`,
      );
    }
  } else if (specialist?.builder === 'builtin:rust') {
    add(['workspace'], 'missing: the rust specialist works in a workspace; name one');
  }
  const tasks = Array.isArray(raw.tasks) ? (raw.tasks as unknown[]) : [];
  const allowed = specialist === undefined ? undefined : commands.allowedCommands(specialist);
  const shown = allowed === undefined || allowed.length === 0 ? 'none' : allowed.join(', ');
  tasks.forEach((task, t) => {
    const expect = isRecord(task) && isRecord(task.expect) ? task.expect : {};
    const listed = Array.isArray(expect.commands) ? (expect.commands as unknown[]) : [];
    const files = isRecord(expect.files_contain) ? Object.keys(expect.files_contain) : [];
    if ((listed.length > 0 || files.length > 0) && workspace === undefined) {
      add(
        ['tasks', t, 'expect'],
        'commands and files_contain check a workspace, and this battery has none; add `workspace:`',
      );
    }
    if (specialist === undefined) return;
    listed.forEach((command, c) => {
      if (typeof command !== 'string' || command === '') return;
      const refusal = commands.refusal(specialist, command, workspace ?? source);
      if (refusal === null) return;
      add(
        ['tasks', t, 'expect', 'commands', c],
        `${refusal.split('\n')[0]} (specialist "${name}" allows: ${shown}; see sandbox.allowed_commands)`,
      );
    });
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

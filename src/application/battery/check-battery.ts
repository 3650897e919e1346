/**
 * A battery file against the config, before anything runs (SPEC §12): the specialist exists,
 * the workspace does, and every `expect` command is one the specialist's sandbox would run.
 * Any problem is `config_invalid` naming the field and its line (exit 2).
 */
import { type BatteryFile, batteryProblems } from '../../config/battery-file.ts';
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
  readonly paths: Pick<BatteryPaths, 'kind'>;
  readonly commands: ExpectCommandPolicy;
}

/** Throws `config_invalid` listing every problem of the file against the config. */
export async function checkBattery(battery: BatteryFile, ports: CheckBatteryPorts): Promise<void> {
  const { settings, paths, commands } = ports;
  const problems: { path: (string | number)[]; message: string }[] = [];
  const specialist = settings.specialists[battery.specialist];
  if (specialist === undefined) {
    const known = Object.keys(settings.specialists).join(', ') || '(none)';
    problems.push({
      path: ['specialist'],
      message: `no specialist "${battery.specialist}" in ${settings.source} (configured: ${known})`,
    });
    throw batteryProblems(battery, problems);
  }
  const workspace = batteryWorkspace(battery, settings);
  if (workspace !== undefined) {
    const kind = await paths.kind(workspace);
    if (kind !== 'directory') {
      problems.push({
        path: ['workspace'],
        message: `${workspace} ${kind === 'missing' ? 'does not exist' : 'is not a directory'}${battery.workspace === undefined ? ` (the workspace of specialist "${battery.specialist}")` : ' (paths are relative to the battery file)'}`,
      });
    }
  } else if (specialist.builder === 'builtin:rust') {
    problems.push({
      path: ['workspace'],
      message: 'missing: the rust specialist works in a workspace; name one',
    });
  }
  const allowed = commands.allowedCommands(specialist);
  const shown = allowed.length === 0 ? 'none' : allowed.join(', ');
  battery.tasks.forEach((task, t) => {
    const checksFiles = task.expect.commands.length > 0 || Object.keys(task.expect.files_contain).length > 0;
    if (checksFiles && workspace === undefined) {
      problems.push({
        path: ['tasks', t, 'expect'],
        message: 'commands and files_contain check a workspace, and this battery has none; add `workspace:`',
      });
    }
    task.expect.commands.forEach((command, c) => {
      const refusal = commands.refusal(specialist, command, workspace ?? battery.source);
      if (refusal === null) return;
      problems.push({
        path: ['tasks', t, 'expect', 'commands', c],
        message: `${refusal.split('\n')[0]} (specialist "${battery.specialist}" allows: ${shown}; see sandbox.allowed_commands)`,
      });
    });
  });
  if (problems.length > 0) throw batteryProblems(battery, problems);
}

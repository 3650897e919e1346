/**
 * A battery file against the config, before anything runs (SPEC §12): the specialist exists,
 * the workspace does, and every `expect` command is one the specialist's sandbox would run.
 * Any problem is `config_invalid` naming the field and its line (exit 2).
 */
import { stat } from 'node:fs/promises';
import { type BatteryFile, batteryProblems } from '../../config/battery-file.ts';
import type { FabricConfig } from '../../config/load.ts';
import { ToolError } from '../../domain/errors.ts';
import { specialistSandbox } from '../../infrastructure/packs/rust/rust-sandbox.ts';
import { splitCommand } from '../../infrastructure/sandbox/argv.ts';
import { checkCommand, parseAllowlist } from '../../infrastructure/sandbox/command-policy.ts';

/** The workspace the battery's cells copy: the file's, else the specialist's. */
export function batteryWorkspace(battery: BatteryFile, config: FabricConfig): string | undefined {
  return battery.workspace ?? config.specialists[battery.specialist]?.workspace;
}

/** Throws `config_invalid` listing every problem of the file against the config. */
export async function checkBattery(battery: BatteryFile, config: FabricConfig): Promise<void> {
  const problems: { path: (string | number)[]; message: string }[] = [];
  const specialist = config.specialists[battery.specialist];
  if (specialist === undefined) {
    const known = Object.keys(config.specialists).join(', ') || '(none)';
    problems.push({
      path: ['specialist'],
      message: `no specialist "${battery.specialist}" in ${config.source} (configured: ${known})`,
    });
    throw batteryProblems(battery, problems);
  }
  const workspace = batteryWorkspace(battery, config);
  if (workspace !== undefined) {
    const info = await stat(workspace).catch(() => undefined);
    if (info === undefined || !info.isDirectory()) {
      problems.push({
        path: ['workspace'],
        message: `${workspace} ${info === undefined ? 'does not exist' : 'is not a directory'}${battery.workspace === undefined ? ` (the workspace of specialist "${battery.specialist}")` : ' (paths are relative to the battery file)'}`,
      });
    }
  } else if (specialist.builder === 'builtin:rust') {
    problems.push({
      path: ['workspace'],
      message: 'missing: the rust specialist works in a workspace; name one',
    });
  }
  const sandbox = specialistSandbox(specialist);
  const allowed = parseAllowlist(sandbox.allowed_commands);
  const shown = sandbox.allowed_commands.length === 0 ? 'none' : sandbox.allowed_commands.join(', ');
  battery.tasks.forEach((task, t) => {
    const checksFiles = task.expect.commands.length > 0 || Object.keys(task.expect.files_contain).length > 0;
    if (checksFiles && workspace === undefined) {
      problems.push({
        path: ['tasks', t, 'expect'],
        message: 'commands and files_contain check a workspace, and this battery has none; add `workspace:`',
      });
    }
    task.expect.commands.forEach((command, c) => {
      try {
        checkCommand(splitCommand(command), { allowed, root: workspace ?? battery.source });
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        problems.push({
          path: ['tasks', t, 'expect', 'commands', c],
          message: `${error.message.split('\n')[0]} (specialist "${battery.specialist}" allows: ${shown}; see sandbox.allowed_commands)`,
        });
      }
    });
  });
  if (problems.length > 0) throw batteryProblems(battery, problems);
}

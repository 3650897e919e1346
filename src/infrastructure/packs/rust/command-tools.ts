import * as v from 'valibot';
import type { Tool } from '../../../application/ports.ts';
import { ToolError } from '../../../domain/errors.ts';
import type { CommandResult, CommandSandbox } from '../../sandbox/command-sandbox.ts';
import { defineTool } from '../define-tool.ts';
import { cargoCheck } from './cargo-check.ts';

/** `shell` and `cargo_check` of SPEC §4.1, both run through the sandbox. */
export function commandTools(sandbox: CommandSandbox, allowedCommands: readonly string[]): Tool[] {
  return [
    defineTool({
      name: 'shell',
      description:
        `Run one allowlisted command in the workspace root, without a shell (no pipes, ;, && or redirections). ` +
        `Allowed: ${allowedCommands.join(', ') || '(none)'}.`,
      input: v.object({ command: v.pipe(v.string(), v.minLength(1)) }),
      // Only allowlisted commands run: a cargo command builds, tests or checks (twice is as once);
      // anything else the allowlist lets through may do what it likes (SPEC §18).
      effect: (args) => (args.command.trim().split(/\s+/)[0] === 'cargo' ? 'idempotent' : 'external'),
      run: async (args, context) =>
        describeRun(await sandbox.run(args.command, context.signal, context.approved?.argv)),
    }),
    defineTool({
      name: 'cargo_check',
      description:
        'Compile-check the workspace (cargo check --message-format=json) and return compact diagnostics: level, code, file:line, message, source line.',
      input: v.object({}),
      effect: 'idempotent',
      // A check that finds errors is a failed call, like a shell command that exits non-zero:
      // the model reads the same report, and the runlog and progress show it failed.
      run: async (_args, context) => {
        const outcome = await cargoCheck(sandbox, context.signal);
        if (!outcome.ok) throw new ToolError(outcome.report);
        return outcome.report;
      },
    }),
  ];
}

/** The model's view of a finished command; a failure of any kind is a ToolError with the output. */
function describeRun(result: CommandResult): string {
  const command = result.argv.join(' ');
  const seconds = (result.durationMs / 1000).toFixed(1);
  const output = [
    result.stdout.trim() === '' ? '' : `--- stdout ---\n${result.stdout.trimEnd()}`,
    result.stderr.trim() === '' ? '' : `--- stderr ---\n${result.stderr.trimEnd()}`,
  ]
    .filter(Boolean)
    .join('\n');
  const capped = result.truncated ? ` (output capped: ${result.outputBytes} bytes printed)` : '';
  const notice = result.notice === undefined ? '' : `note: ${result.notice}\n`;
  switch (result.end) {
    case 'exited':
      if (result.exitCode === 0)
        return `${notice}$ ${command}\nexit code 0 (${seconds}s)${capped}\n${output}`.trimEnd();
      throw new ToolError(
        `${notice}$ ${command}\nexit code ${result.exitCode} (${seconds}s)${capped}\n${output}`.trimEnd(),
      );
    case 'timeout':
      throw new ToolError(
        `$ ${command}\ntimed out after ${seconds}s; it was killed with every process it started.${capped}\n${output}`.trimEnd(),
      );
    case 'cancelled':
      throw new ToolError(`$ ${command}\ncancelled; it was killed with every process it started.`);
    case 'flood':
      throw new ToolError(
        `$ ${command}\nkilled after printing ${result.outputBytes} bytes, more than the fabric reads.\n${output}`.trimEnd(),
      );
    case 'spawn_failed':
      throw new ToolError(`$ ${command}\ncould not be started: ${result.spawnError}`);
  }
}

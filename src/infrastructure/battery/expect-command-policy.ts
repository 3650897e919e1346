/**
 * A battery's `expect.commands` against the specialist's sandbox (`ExpectCommandPolicy`): the
 * same sandbox (the rust pack's defaults included) and allowlist as the model's `shell`.
 */
import type { ExpectCommandPolicy } from '../../application/battery/session-ports.ts';
import { ToolError } from '../../domain/errors.ts';
import { specialistSandbox } from '../packs/rust/rust-sandbox.ts';
import { splitCommand } from '../sandbox/argv.ts';
import { checkCommand, parseAllowlist } from '../sandbox/command-policy.ts';

export const sandboxCommandPolicy: ExpectCommandPolicy = {
  allowedCommands: (specialist) => specialistSandbox(specialist).allowed_commands,
  refusal(specialist, command, root) {
    const allowed = parseAllowlist(specialistSandbox(specialist).allowed_commands);
    try {
      checkCommand(splitCommand(command), { allowed, root });
      return null;
    } catch (error) {
      if (!(error instanceof ToolError)) throw error;
      return error.message;
    }
  },
};

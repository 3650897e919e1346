/**
 * A battery's `expect.commands` against the specialist's sandbox (`ExpectCommandPolicy`): the
 * same sandbox (the rust pack's defaults included) and allowlist as the model's `shell`, with the
 * commands the policy's `allow` rules name (SPEC §19), as the model's shell has them.
 */
import type { ExpectCommandPolicy } from '../../application/battery/session-ports.ts';
import type { SpecialistConfig } from '../../config/schema.ts';
import { ToolError } from '../../domain/errors.ts';
import { type PolicyRule, placeRules } from '../../domain/policy.ts';
import { specialistSandbox } from '../packs/rust/rust-sandbox.ts';
import { allowRuleCommands } from '../registry/policy-guard.ts';
import { splitCommand } from '../sandbox/argv.ts';
import { checkCommand, parseAllowlist } from '../sandbox/command-policy.ts';

/** The commands a specialist's shell runs: its allowlist, then what `allow` rules (its own, then the top-level) name. */
export function shellAllowlist(specialist: SpecialistConfig, topRules: readonly PolicyRule[]): string[] {
  const rules = placeRules([...(specialist.policy?.rules ?? []), ...topRules], '');
  return [...specialistSandbox(specialist).allowed_commands, ...allowRuleCommands(rules)];
}

/** The policy of expect.commands for a config whose top-level rules are `topRules`. */
export function sandboxCommandPolicy(topRules: readonly PolicyRule[]): ExpectCommandPolicy {
  return {
    allowedCommands: (specialist) => shellAllowlist(specialist, topRules),
    refusal(specialist, command, root) {
      const allowed = parseAllowlist(shellAllowlist(specialist, topRules));
      try {
        checkCommand(splitCommand(command), { allowed, root });
        return null;
      } catch (error) {
        if (!(error instanceof ToolError)) throw error;
        return error.message;
      }
    },
  };
}

import type { PolicyCheck, SpecialistPack, Tool, ToolContext } from '../../application/ports.ts';
import { ToolError } from '../../domain/errors.ts';
import { showArgv } from '../../domain/show-argv.ts';
import {
  COMMAND_TOOL,
  commandWords,
  decidePolicy,
  globMatches,
  type PlacedRule,
  type PolicyRequest,
  type PolicyVerdict,
} from '../../domain/policy.ts';
import { splitCommand } from '../sandbox/argv.ts';

/**
 * A pack whose tools obey `policy.rules` (SPEC §19): a call a rule denies, or one a rule says
 * needs a person's approval, is refused before the tool runs; the model is told which rule. An
 * `allow` rule for a command reaches the sandbox as an allowlist entry (`allowRuleCommands`), so
 * an allowed command runs in the same sandbox as an allowlisted one. The pack is otherwise the
 * same object (its finish gate and every other member stay).
 */
export function guardPack(pack: SpecialistPack, rules: readonly PlacedRule[]): SpecialistPack {
  if (rules.length === 0) return pack;
  let inner: readonly Tool[] | undefined;
  let guarded: readonly Tool[] = [];
  const tools = (): readonly Tool[] => {
    const current = pack.tools();
    if (current !== inner) {
      inner = current;
      guarded = current.map((tool) => guardTool(tool, rules));
    }
    return guarded;
  };
  return new Proxy(pack, {
    get(target, property) {
      if (property === 'tools') return tools;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** The commands `allow` rules name for the command tool: the sandbox runs them as allowlisted. */
export function allowRuleCommands(rules: readonly PlacedRule[]): string[] {
  return rules
    .filter(
      ({ rule }) =>
        rule.decision === 'allow' &&
        rule.command !== undefined &&
        globMatches(rule.tool, COMMAND_TOOL, false),
    )
    .map(({ rule }) => commandWords(rule.command!).join(' '));
}

/** What the policy knows of a call: its tool, its argv (the command tool) or its `path`. */
export function policyRequest(tool: string, args: unknown): PolicyRequest {
  const fields = (typeof args === 'object' && args !== null ? args : {}) as Record<string, unknown>;
  let argv: string[] | undefined;
  if (tool === COMMAND_TOOL && typeof fields.command === 'string') {
    try {
      argv = splitCommand(fields.command);
    } catch {
      // Not a command the sandbox would run: it refuses it with the reason.
      argv = undefined;
    }
  }
  return { tool, argv, path: typeof fields.path === 'string' ? fields.path : undefined };
}

function guardTool(tool: Tool, rules: readonly PlacedRule[]): Tool {
  const checkPolicy = (args: unknown): PolicyCheck => {
    const request = policyRequest(tool.spec.name, args);
    const verdict = decidePolicy(request, rules);
    // Only a rule decides here: a command no rule names is left to the sandbox's allowlist.
    return verdict.rule === undefined
      ? { decision: 'allow', by: verdict.by, request }
      : { decision: verdict.decision, by: verdict.by, request };
  };
  const run = async (args: unknown, context: ToolContext) => {
    const request = policyRequest(tool.spec.name, args);
    const verdict = decidePolicy(request, rules);
    // A person's approval (or a grant) lets an `ask` through; `deny` wins over it (SPEC §19).
    const approved = verdict.decision === 'ask' && context.approved !== undefined;
    if (verdict.rule !== undefined && verdict.decision !== 'allow' && !approved)
      throw refusal(verdict, request);
    return tool.run(args, context);
  };
  return new Proxy(tool, {
    get(target, property) {
      if (property === 'run') return run;
      if (property === 'checkPolicy') return checkPolicy;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function refusal(verdict: PolicyVerdict, request: PolicyRequest): ToolError {
  const what = request.argv !== undefined ? `\`${showArgv(request.argv)}\`` : `this ${request.tool} call`;
  const message =
    verdict.decision === 'deny'
      ? `Not run: ${what} is denied by the policy, ${verdict.by}. Do it another way, or ask for the policy to change.`
      : `Not run: ${what} needs a person's approval (${verdict.by}), and nobody can be asked in this run. Do without it, or say in finish_task that it is needed.`;
  return new ToolError(message, {
    securityEvent: {
      eventType: 'policy',
      rule: verdict.decision === 'deny' ? 'policy_deny' : 'needs_approval',
      requested: request.argv ?? request.path ?? request.tool,
      resolved: verdict.rule?.where,
    },
  });
}

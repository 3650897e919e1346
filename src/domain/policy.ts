/**
 * `policy.rules` (SPEC §19): which tool calls run, need a person's approval, or are refused.
 * Deterministic: rules match on the tool's name, the parsed argv of a command, or a path; no
 * model decides anything here.
 */

export type PolicyDecision = 'allow' | 'ask' | 'deny';

/** One configured rule, as the config file holds it. */
export interface PolicyRule {
  /** A glob on the tool's name: `shell`, `write_file`, `mcp__*`. */
  readonly tool: string;
  /** A prefix of the parsed argv, in words (`cargo tree` matches `cargo tree -e features`). */
  readonly command?: string | undefined;
  /** A glob on a path argument, relative to the workspace (`*` within a folder, `**` across). */
  readonly path?: string | undefined;
  readonly decision: PolicyDecision;
}

/** A rule and where it is written, e.g. `specialists.rust.policy.rules[0]`. */
export interface PlacedRule {
  readonly rule: PolicyRule;
  readonly where: string;
}

/** The call a decision is about: the tool, and its argv or path when it has one. */
export interface PolicyRequest {
  readonly tool: string;
  readonly argv?: readonly string[] | undefined;
  readonly path?: string | undefined;
}

/** What the policy says about a call, and what says it. */
export interface PolicyVerdict {
  readonly decision: PolicyDecision;
  /** The deciding rule; absent when the allowlist or the default decides. */
  readonly rule?: PlacedRule | undefined;
  /** In words: `specialists.rust.policy.rules[0] (shell "cargo tree": ask)`, `sandbox.allowed_commands "cargo check"`. */
  readonly by: string;
}

/** The tool whose argv the allowlist governs. */
export const COMMAND_TOOL = 'shell';

const RANK: Readonly<Record<PolicyDecision, number>> = { allow: 0, ask: 1, deny: 2 };

/**
 * Decides a call: of the rules that match it, `deny` wins over `ask`, `ask` over `allow`; among
 * equals, the first (a specialist's rules come before the top-level ones). With no rule, a
 * command is allowed when the allowlist allows it (given as words) and refused otherwise; any
 * other tool the pack offers is allowed.
 */
export function decidePolicy(
  request: PolicyRequest,
  rules: readonly PlacedRule[],
  allowlist?: readonly (readonly string[])[],
): PolicyVerdict {
  let best: PlacedRule | undefined;
  for (const placed of rules) {
    if (!ruleMatches(placed.rule, request)) continue;
    if (best === undefined || RANK[placed.rule.decision] > RANK[best.rule.decision]) best = placed;
  }
  if (best !== undefined) return { decision: best.rule.decision, rule: best, by: describeRule(best) };
  if (request.argv === undefined || request.tool !== COMMAND_TOOL) {
    return { decision: 'allow', by: 'no rule matches; the tool is one the specialist offers' };
  }
  const entry = allowlist?.find((words) => startsWithWords(request.argv!, words));
  if (entry !== undefined) return { decision: 'allow', by: `sandbox.allowed_commands "${entry.join(' ')}"` };
  return {
    decision: 'deny',
    by: 'no rule and no sandbox.allowed_commands entry allows it (a command no rule allows is refused)',
  };
}

/** True when the rule applies to the call. */
export function ruleMatches(rule: PolicyRule, request: PolicyRequest): boolean {
  if (!globMatches(rule.tool, request.tool, false)) return false;
  if (rule.command !== undefined) {
    return request.argv !== undefined && startsWithWords(request.argv, commandWords(rule.command));
  }
  if (rule.path !== undefined) {
    return request.path !== undefined && globMatches(rule.path, normalisePath(request.path), true);
  }
  return true;
}

/** `"cargo  tree"` → `['cargo', 'tree']`. */
export function commandWords(command: string): string[] {
  return command.trim().split(/\s+/).filter(Boolean);
}

/** The rule in words, as errors, refusals and `fabric policy check` show it. */
export function describeRule(placed: PlacedRule): string {
  const { rule } = placed;
  const what =
    rule.command !== undefined
      ? ` "${commandWords(rule.command).join(' ')}"`
      : rule.path !== undefined
        ? ` path ${rule.path}`
        : '';
  return `${placed.where} (${rule.tool}${what}: ${rule.decision})`;
}

/** Places a list of rules: `policy.rules[0]`, … under a prefix. */
export function placeRules(rules: readonly PolicyRule[], prefix: string): PlacedRule[] {
  return rules.map((rule, index) => ({ rule, where: `${prefix}policy.rules[${index}]` }));
}

/** The rules of a specialist, in front of the top-level ones (SPEC §19). */
export function rulesFor(
  specialist: string,
  own: readonly PolicyRule[] | undefined,
  top: readonly PolicyRule[] | undefined,
): PlacedRule[] {
  return [...placeRules(own ?? [], `specialists.${specialist}.`), ...placeRules(top ?? [], '')];
}

function startsWithWords(argv: readonly string[], words: readonly string[]): boolean {
  return words.length > 0 && words.length <= argv.length && words.every((word, i) => argv[i] === word);
}

/** `./src/a.rs` → `src/a.rs`; backslashes as slashes. */
function normalisePath(value: string): string {
  return value.replaceAll('\\', '/').replace(/^(\.\/)+/, '');
}

/**
 * A glob: `*` any characters (within one path segment when `paths`), `**` any characters across
 * segments, `?` one character; everything else literal.
 */
export function globMatches(glob: string, value: string, paths: boolean): boolean {
  let pattern = '';
  for (let i = 0; i < glob.length; i++) {
    const char = glob[i]!;
    if (char === '*' && glob[i + 1] === '*') {
      // `**/` also matches no folder at all: `**/*.rs` matches `main.rs`.
      const slash = glob[i + 2] === '/';
      pattern += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (char === '*') pattern += paths ? '[^/]*' : '.*';
    else if (char === '?') pattern += paths ? '[^/]' : '.';
    else pattern += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${pattern}$`).test(value);
}

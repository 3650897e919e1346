/** `fabric policy check`: what the policy would do with a call, and which rule decides (SPEC §19). */
import { resolve } from 'node:path';
import type { FabricConfig } from '../config/load.ts';
import { FabricError, ToolError } from '../domain/errors.ts';
import {
  COMMAND_TOOL,
  decidePolicy,
  type PolicyRequest,
  type PolicyVerdict,
  rulesFor,
} from '../domain/policy.ts';
import { specialistSandbox } from '../infrastructure/packs/rust/rust-sandbox.ts';
import { FileApprovalStore } from '../infrastructure/runlog/file-approval-store.ts';
import {
  type Grant,
  type GrantPattern,
  type OnApproval,
  patternCovers,
  proposePatterns,
} from '../domain/approvals.ts';
import { allowRuleCommands } from '../infrastructure/registry/policy-guard.ts';
import { checkCommand, parseAllowlist } from '../infrastructure/sandbox/command-policy.ts';
import { checkBlanks, checkCall, offeredTools, pathRefusal } from './policy-check-call.ts';

export interface PolicyCheck {
  readonly specialist: string;
  readonly request: PolicyRequest;
  readonly verdict: PolicyVerdict;
  /** An allowed command the sandbox's fixed rules still refuse (`cargo run`, a path outside). */
  readonly sandboxRefusal?: string | undefined;
}

/** For an `ask`: what waits for the answer, the grant in force that covers the call, and what a person could grant. */
export interface AskDetails {
  /** `policy.on_approval` (the specialist's, else the top level); undefined: the channel decides. */
  readonly onApproval: OnApproval | undefined;
  readonly grant: Grant | undefined;
  readonly proposals: readonly GrantPattern[];
}

/** What an `ask` comes to now: a grant in the runs directory may cover it (SPEC §19). */
export async function askDetails(config: FabricConfig, check: PolicyCheck): Promise<AskDetails> {
  const spec = config.specialists[check.specialist];
  const subject = {
    ...check.request,
    arguments: JSON.stringify(
      check.request.argv === undefined ? {} : { command: check.request.argv.join(' ') },
    ),
  };
  const grants = await new FileApprovalStore(config.runs_dir).grants({ specialist: check.specialist });
  return {
    onApproval: spec?.policy?.on_approval ?? config.policy.on_approval,
    grant: grants.find((grant) => grant.scope === 'specialist' && patternCovers(grant.pattern, subject)),
    proposals: proposePatterns(subject),
  };
}

/**
 * Decides one call the way a run of the specialist would, without running anything. A call no run
 * could make (a tool the specialist does not offer, a command for a file tool, a blank flag) is a
 * usage error, not a decision.
 */
export async function checkPolicy(
  config: FabricConfig,
  query: {
    specialist?: string | undefined;
    tool?: string | undefined;
    argv?: readonly string[] | undefined;
    path?: string | undefined;
  },
  cwd: string,
): Promise<PolicyCheck> {
  const specialist = query.specialist ?? onlySpecialist(config);
  const spec = config.specialists[specialist];
  if (spec === undefined) {
    const known = Object.keys(config.specialists).join(', ') || '(none)';
    throw new FabricError(
      'specialist_unknown',
      `No specialist "${specialist}". Configured specialists: ${known}. \`fabric specialists\` lists them.`,
    );
  }
  checkBlanks(query);
  const tool = query.tool ?? (query.argv === undefined ? undefined : COMMAND_TOOL);
  if (tool === undefined) {
    throw new FabricError(
      'usage',
      'fabric policy check needs a command after -- (e.g. `-- cargo tree`) or --tool NAME (with --path P for a file tool). (fabric policy check --help)',
    );
  }
  const argv = query.argv;
  const call = { tool, argv, path: query.path };
  const offered = await offeredTools(config, specialist);
  checkCall(specialist, call, offered);
  if (tool === COMMAND_TOOL && argv === undefined) {
    throw new FabricError(
      'usage',
      `The ${COMMAND_TOOL} tool is decided by its command: put it after --, e.g. \`fabric policy check -- cargo tree\`. (fabric policy check --help)`,
    );
  }
  const request: PolicyRequest = call;
  const rules = rulesFor(specialist, spec.policy?.rules, config.policy.rules);
  const allowlist = parseAllowlist(specialistSandbox(spec).allowed_commands);
  const verdict = decidePolicy(request, rules, allowlist);
  if (verdict.decision !== 'allow') return { specialist, request, verdict };
  if (argv === undefined || tool !== COMMAND_TOOL) {
    // An allowed path still meets the file tools' confinement to the workspace, as in a run.
    const sandboxRefusal = await pathRefusal(config, specialist, call, offered);
    return { specialist, request, verdict, ...(sandboxRefusal === undefined ? {} : { sandboxRefusal }) };
  }
  // An allowed command still meets the sandbox's fixed rules, as in a run.
  const allowed = [...allowlist, ...parseAllowlist(allowRuleCommands(rules))];
  try {
    checkCommand(argv, { allowed, root: resolve(spec.workspace ?? cwd) });
    return { specialist, request, verdict };
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { specialist, request, verdict, sandboxRefusal: error.message };
  }
}

function onlySpecialist(config: FabricConfig): string {
  const names = Object.keys(config.specialists);
  if (names.length === 1) return names[0]!;
  throw new FabricError(
    'usage',
    `fabric policy check needs --specialist NAME: the config defines ${names.length === 0 ? 'none' : names.join(', ')}. (fabric policy check --help)`,
  );
}

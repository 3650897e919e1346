import {
  type AskDetails,
  askDetails,
  checkPolicy,
  type PolicyCheck,
} from '../../../composition/policy-check.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { showArgv, showText } from '../../../domain/show-argv.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const POLICY_HELP = `Usage: fabric policy check [--specialist NAME] [--json] -- COMMAND [ARGS...]
       fabric policy check [--specialist NAME] [--json] --tool NAME [--path PATH]

Says what a run of the specialist would do with a call, without running it: allow, ask (a
person approves first) or deny, and the rule that decides. Rules come from policy.rules in the
config, the specialist's own first (SPEC §19): of the rules that match, deny wins over ask and
ask over allow; a command no rule matches runs only when sandbox.allowed_commands allows it.
A command is matched on its words, as the shell tool parses it.

Options:
  -s, --specialist NAME   the specialist (default: the only one configured)
      --tool NAME         the tool (default: shell when a command follows --)
      --path PATH         the path argument of a file tool, relative to the workspace
      --json              one JSON object: decision, rule, by, sandbox_refusal
  -c, --config FILE       the config file

Examples:
  fabric policy check -- cargo tree -e features
  fabric policy check --specialist rust --tool write_file --path Cargo.lock
`;

/** `fabric policy check`. */
export async function policyCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = argv;
  if (sub === undefined || sub === '--help' || sub === '-h') {
    io.stdout.write(POLICY_HELP);
    return sub === undefined ? EXIT.usage : EXIT.ok;
  }
  if (sub !== 'check') {
    throw new FabricError(
      'usage',
      `Unknown policy command "${sub}": the one there is is \`check\`. (fabric policy --help)`,
    );
  }
  const dash = rest.indexOf('--');
  const flags = dash === -1 ? rest : rest.slice(0, dash);
  const command = dash === -1 ? undefined : rest.slice(dash + 1);
  const { values, positionals } = parseCommandArgs('policy check', flags, {
    specialist: { type: 'string', short: 's' },
    tool: { type: 'string' },
    path: { type: 'string' },
    json: { type: 'boolean' },
    config: { type: 'string', short: 'c' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(POLICY_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0) {
    throw new FabricError(
      'usage',
      `Put the command after --: \`fabric policy check -- ${positionals.join(' ')}\` (the fabric's flags come before it). (fabric policy check --help)`,
    );
  }
  if (command !== undefined && command.length === 0) {
    throw new FabricError(
      'usage',
      'Nothing follows --: name the command, e.g. `-- cargo tree`. (fabric policy check --help)',
    );
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const check = await checkPolicy(
    config,
    { specialist: values.specialist, tool: values.tool, argv: command, path: values.path },
    io.cwd,
  );
  const decision = check.sandboxRefusal === undefined ? check.verdict.decision : 'deny';
  const ask = decision === 'ask' ? await askDetails(config, check) : undefined;
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({
        specialist: check.specialist,
        tool: check.request.tool,
        ...(check.request.argv === undefined ? {} : { argv: check.request.argv }),
        ...(check.request.path === undefined ? {} : { path: check.request.path }),
        decision,
        rule: check.verdict.rule?.where ?? null,
        by: check.verdict.by,
        sandbox_refusal: check.sandboxRefusal ?? null,
        ...(ask === undefined
          ? {}
          : {
              on_approval: ask.onApproval ?? null,
              grant: ask.grant?.id ?? null,
              proposals: ask.proposals.map(({ label, matches, does_not_match }) => ({
                label,
                matches,
                does_not_match,
              })),
            }),
      })}\n`,
    );
  } else io.stdout.write(describe(check, decision, ask));
  return EXIT.ok;
}

function describe(check: PolicyCheck, decision: string, ask: AskDetails | undefined): string {
  const { request, verdict } = check;
  const what =
    request.argv !== undefined
      ? `\`${showArgv(request.argv)}\``
      : `${request.tool}${request.path === undefined ? '' : ` on ${showText(request.path)}`}`;
  const meaning: Record<string, string> = {
    allow: 'runs (in the sandbox)',
    ask: "waits for a person's approval",
    deny: 'is refused; the model is told why',
  };
  const lines = [`${decision}: ${what} ${meaning[decision]} for specialist ${check.specialist}`];
  lines.push(`  decided by ${verdict.by}`);
  if (check.sandboxRefusal !== undefined)
    lines.push(`  the policy allows it, but the sandbox refuses it: ${showText(check.sandboxRefusal)}`);
  if (ask?.grant !== undefined)
    lines.push(
      `  covered now by grant ${ask.grant.id} (${showText(ask.grant.pattern.label)}, ${ask.grant.expires_at === undefined ? 'until revoked' : `until ${ask.grant.expires_at}`}): it runs without asking`,
    );
  else if (ask !== undefined) {
    lines.push(
      `  on_approval: ${ask.onApproval ?? "the channel's default (a terminal waits with a prompt, no terminal denies, HTTP, MCP, the daemon and workers park the run)"}`,
    );
    lines.push('  a person may grant:');
    for (const [index, pattern] of ask.proposals.entries())
      lines.push(
        showText(
          `    ${index}: ${pattern.label} — matches ${pattern.matches}; not ${pattern.does_not_match}`,
        ),
      );
  }
  return `${lines.join('\n')}\n`;
}

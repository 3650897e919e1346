import { parkedRun } from '../../../application/approvals/cancel-parked.ts';
import { loadConfig } from '../../../config/load.ts';
import { createFabric } from '../../../composition/fabric.ts';
import {
  MAX_GRANT_EXPIRY_S,
  MAX_GRANT_EXPIRY_TEXT,
  answerApproval,
} from '../../../application/approvals/answer-approval.ts';
import type { ApprovalStore } from '../../../application/approvals/approval-store.ts';
import {
  type ApprovalRecord,
  type ApprovalState,
  type Grant,
  type GrantScope,
  GRANT_SCOPES,
  describeCall,
} from '../../../domain/approvals.ts';
import { FabricError } from '../../../domain/errors.ts';
import { showText } from '../../../domain/show-argv.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const APPROVALS_HELP = `Usage: fabric approvals list [--state STATE] [--run RUN] [--grants] [--json]
       fabric approvals answer ID approve|deny [--scope once|run|specialist] [--pattern N]
                               [--message TEXT] [--expires DURATION] [--json]
       fabric approvals revoke GRANT [--json]

A call a policy rule says \`ask\` about (SPEC §19) waits for a person: the run's terminal prompt
waits for it, or the run is parked (\`awaiting_approval\`: no model request, no worker held) and
goes on once answered. These commands work from any terminal with the same config (its runs
directory): no address to type.

  list      the approvals, newest first (default: the pending ones), or with --grants the
            grants in force (add --state all to see revoked and expired ones too)
  answer    approve or deny one, with an optional message the model reads. A grant that lasts
            uses a pattern the fabric proposed (shown by list): --pattern 0 is the exact call,
            1 and on are broader (\`cargo add <any arguments>\`), each shown with what it would
            and would not match. The first answer wins: a second one is refused (exit 2).
  revoke    ends a grant (a \`run\` or \`specialist\` answer)

A parked run goes on by itself when \`fabric serve\` (on the same runs directory) sees the answer;
with none running, \`fabric resume RUN\` goes on with it here.

Options:
      --state STATE       pending (default), approved, denied, expired, cancelled or all
      --run RUN           only this run's approvals
      --grants            list the grants instead of the approvals
      --scope SCOPE       once (default): this call; run: the rest of the run;
                          specialist: every run of the specialist, until revoked or expired
      --pattern N         which proposed pattern a run or specialist grant uses (default 0)
      --message TEXT      told to the model with the answer
      --expires DURATION  when a grant ends: 3600, 90s, 30m, 8h or 7d, at most 3650d
                          (10 years; default: when revoked)
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json              print the approvals, the answered approval or the grant as JSON
  -h, --help              show this help

Exit codes: 0 done · 1 the runs directory cannot be written (runlog_unwritable)
            2 usage error, unknown id, already answered (approval_answered), or a damaged
            approval file (approval_unreadable)

Examples:
  fabric approvals list
  fabric approvals answer apr_3f2a9c1d0b7e approve --scope run --pattern 1
  fabric approvals answer apr_3f2a9c1d0b7e deny --message "use cargo metadata instead"
`;

/** The flags each verb takes (besides --config, --json and --help). */
const FLAGS_OF = {
  list: ['state', 'run', 'grants'],
  answer: ['scope', 'pattern', 'message', 'expires'],
  revoke: [],
} as const;

/** A flag of another verb is refused, never ignored: `list --message hi` would do nothing with it. */
function refuseMisplaced(verb: keyof typeof FLAGS_OF, values: Record<string, unknown>): void {
  for (const [owner, flags] of Object.entries(FLAGS_OF))
    for (const flag of flags)
      if (owner !== verb && values[flag] !== undefined)
        throw new FabricError(
          'usage',
          `--${flag} belongs to fabric approvals ${owner}, not ${verb}. (fabric approvals --help)`,
        );
  if (values.grants === true && values.state !== undefined && values.state !== 'all')
    throw new FabricError(
      'usage',
      `--grants lists the grants in force, or with --state all every grant (revoked and expired too); --state ${String(values.state)} is for approvals.`,
    );
}

const STATES: readonly (ApprovalState | 'all')[] = [
  'pending',
  'approved',
  'denied',
  'expired',
  'cancelled',
  'all',
];

/** `fabric approvals`. */
export async function approvalsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('approvals', argv, {
    state: { type: 'string' },
    run: { type: 'string' },
    grants: { type: 'boolean' },
    scope: { type: 'string' },
    pattern: { type: 'string' },
    message: { type: 'string' },
    expires: { type: 'string' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(APPROVALS_HELP);
    return EXIT.ok;
  }
  const [verb, ...rest] = positionals;
  if (verb !== 'list' && verb !== 'answer' && verb !== 'revoke') {
    io.stderr.write(
      `${verb === undefined ? 'fabric approvals needs list, answer or revoke.' : `Unknown: fabric approvals ${verb}; use list, answer or revoke.`}\n\n${APPROVALS_HELP}`,
    );
    return EXIT.usage;
  }
  refuseMisplaced(verb, values);
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = createFabric(config, { lifetime: 'one_shot' });
  try {
    const store = fabric.approvals;
    if (verb === 'list') {
      if (rest.length > 0)
        throw new FabricError('usage', 'fabric approvals list takes no positional argument.');
      return await list(store, values, io);
    }
    if (verb === 'revoke') {
      const [id] = rest;
      if (id === undefined || rest.length > 1)
        throw new FabricError(
          'usage',
          'fabric approvals revoke needs one GRANT id (fabric approvals list --grants).',
        );
      const grant = await store.revoke(id, new Date().toISOString());
      if (values.json) io.stdout.write(`${JSON.stringify(grant)}\n`);
      else
        io.stdout.write(
          `revoked ${grant.id}: ${showText(grant.pattern.label)} (${grant.scope} grant of ${grant.specialist})\n`,
        );
      return EXIT.ok;
    }
    const [id, decision] = rest;
    if (id === undefined || (decision !== 'approve' && decision !== 'deny') || rest.length > 2)
      throw new FabricError(
        'usage',
        'fabric approvals answer needs an approval ID and approve or deny, e.g. fabric approvals answer apr_3f2a9c1d0b7e approve.',
      );
    const scope = values.scope;
    if (scope !== undefined && !GRANT_SCOPES.includes(scope as GrantScope))
      throw new FabricError('usage', `--scope takes once, run or specialist, not "${scope}".`);
    const pattern = values.pattern === undefined ? undefined : Number(values.pattern);
    if (pattern !== undefined && (!Number.isInteger(pattern) || pattern < 0))
      throw new FabricError(
        'usage',
        `--pattern takes a pattern's number (0, 1, …), not "${values.pattern}".`,
      );
    const answered = await answerApproval(
      store,
      id,
      {
        decision,
        scope: scope as GrantScope | undefined,
        pattern,
        message: values.message,
        expiresInS: values.expires === undefined ? undefined : durationSeconds(values.expires),
        channel: 'cli',
        by: io.env.USER ?? io.env.LOGNAME,
      },
      new Date(),
    );
    if (values.json) io.stdout.write(`${JSON.stringify(answered)}\n`);
    else
      io.stdout.write(
        `${answered.id} ${answered.state}: ${describeCall(answered)}\n${await whatNext(fabric, answered)}\n`,
      );
    return EXIT.ok;
  } finally {
    await fabric.close();
  }
}

async function list(
  store: ApprovalStore,
  values: {
    state?: string | undefined;
    run?: string | undefined;
    grants?: boolean | undefined;
    json?: boolean | undefined;
  },
  io: CliIo,
): Promise<number> {
  const state = values.state ?? (values.grants ? undefined : 'pending');
  if (state !== undefined && !STATES.includes(state as ApprovalState))
    throw new FabricError('usage', `--state takes ${STATES.join(', ')}, not "${state}".`);
  // Files of the store that are not whole are left out of the lists: said, with what to do.
  for (const bad of await store.unreadable())
    io.stderr.write(`warning: ${bad.file} is not whole (${bad.problem}): ${bad.fix}.\n`);
  if (values.grants) {
    const grants = await store.grants({ all: state === 'all' });
    if (values.json) io.stdout.write(`${JSON.stringify(grants)}\n`);
    else io.stdout.write(grants.length === 0 ? 'No grants in force.\n' : grants.map(grantLine).join(''));
    return EXIT.ok;
  }
  const records = await store.list({
    state: state === 'all' ? undefined : (state as ApprovalState),
    runId: values.run,
  });
  if (values.json) {
    io.stdout.write(`${JSON.stringify(records)}\n`);
    return EXIT.ok;
  }
  if (records.length === 0) {
    io.stdout.write(
      `No ${state === 'all' ? '' : `${state} `}approvals${values.run === undefined ? '' : ` for run ${values.run}`}.\n`,
    );
    return EXIT.ok;
  }
  io.stdout.write(records.map(recordLines).join('\n'));
  return EXIT.ok;
}

/** An approval as the terminal shows it: the exact call, the rule, and the patterns to choose from. */
export function recordLines(record: ApprovalRecord): string {
  const answer = record.answer;
  const lines = [
    `${record.id}  ${record.state}  run ${record.run_id} (${record.specialist}), step ${record.step}`,
    `  ${describeCall(record)}`,
    `  asked by ${record.rule}`,
    ...(record.expires_at === undefined || record.state !== 'pending'
      ? []
      : [`  expires ${record.expires_at}`]),
    ...(answer === undefined
      ? record.proposals.map(
          (pattern, index) =>
            `  pattern ${index}: ${pattern.label} — matches ${pattern.matches}; not ${pattern.does_not_match}`,
        )
      : [
          `  ${answer.state} through ${answer.channel}${answer.by === undefined ? '' : ` (${answer.by})`} at ${answer.at}, scope ${answer.scope}${answer.message === undefined ? '' : `: ${answer.message}`}`,
        ]),
  ];
  // The call is shell-quoted already; this also covers labels stored by an older fabric and
  // the answer's free text, so no line can carry a control character to the terminal.
  return `${lines.map(showText).join('\n')}\n`;
}

function grantLine(grant: Grant): string {
  const state =
    grant.revoked_at !== undefined
      ? `revoked ${grant.revoked_at}`
      : grant.expires_at === undefined
        ? 'until revoked'
        : `until ${grant.expires_at}`;
  const where = grant.scope === 'run' ? `run ${grant.run_id}` : `every run of ${grant.specialist}`;
  return `${showText(`${grant.id}  ${grant.pattern.label}  (${where}; ${state}; from ${grant.approval_id})`)}\n`;
}

/** What happens to the run now that the approval has its answer. */
async function whatNext(fabric: ReturnType<typeof createFabric>, record: ApprovalRecord): Promise<string> {
  const contents = await fabric.runLogStore.read(record.run_id).catch(() => undefined);
  const parked = contents === undefined ? undefined : parkedRun(contents.events);
  if (parked?.resumer === 'daemon')
    return (
      `Run ${record.run_id} is the OpenSpec daemon's: the daemon brings its edits back and goes on with it ` +
      `(within a second while it runs; else when fabric daemon next starts). fabric daemon status shows the task.`
    );
  if (parked !== undefined)
    return (
      `Run ${record.run_id} is parked: a fabric serve on this runs directory resumes it when it sees the answer; ` +
      `with none running: fabric resume ${record.run_id}`
    );
  return `Run ${record.run_id} reads the answer and goes on.`;
}

/** `3600`, `90s`, `30m`, `8h`, `7d` → seconds, at most `MAX_GRANT_EXPIRY_S`. */
export function durationSeconds(text: string): number {
  const match = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match?.[2] ?? ''] ?? 1;
  const seconds = match === null ? Number.NaN : Number(match[1]) * unit;
  if (!(seconds > 0))
    throw new FabricError(
      'usage',
      `--expires takes a duration such as 3600, 90s, 30m, 8h or 7d, not "${text}".`,
    );
  // A date that far is no date (`Invalid time value`); refused before anything is written.
  if (seconds > MAX_GRANT_EXPIRY_S)
    throw new FabricError(
      'usage',
      `--expires is ${MAX_GRANT_EXPIRY_TEXT}, not "${text}"; leave it out for a grant that lasts until revoked.`,
    );
  return seconds;
}

import { dirname, resolve } from 'node:path';
import { loadConfig } from '../../../config/load.ts';
import { runLogsSeenFrom } from '../../../composition/control-store.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { exitCodeForRun } from '../exit-code.ts';
import { type CliIo, EXIT } from '../io.ts';
import { formatPayload } from '../payload-format.ts';
import { ProgressReporter } from '../progress.ts';
import { styleFor } from '../style.ts';
import { onApprovalFlag } from './run.ts';
import { terminalApprovalPrompt } from '../approval-prompt.ts';

export const RESUME_HELP = `Usage: fabric resume RUN [--max-steps N] [--force] [--json]

Goes on with a run whose process stopped (killed, Ctrl-C, a reboot), or that ended at its step
limit or because no backend answered: the same run id, its conversation rebuilt from its runlog
as it was last sent, so no recorded model turn is asked again. A tool call that started and has
no result is run again only when that is safe (reads, idempotent tools, an edit not yet in the
file); any other is not run again and the model is told so. Files someone changed while the run
was stopped are named to the model. RUN is a run id, a unique prefix of one, or a runlog's path.
Inside a repository a daemon works in (or with --repo), its runs are found too, and the resumed
run is written where it is (the daemon's .git/fabric/runs).

Options:
      --max-steps N       N more steps (required for a run that ended at its step limit;
                          default: what the run's limit left)
      --force             go on although the config or the specialist's pack changed since
                          the run started, or its process is on another machine
      --on-approval MODE  as fabric run: wait, park, deny or fail (a run parked on an approval
                          goes on here once it is answered: fabric approvals answer)
      --repo DIR          find RUN among a daemon's runs in this repository too (default: the
                          current directory's)
  -c, --config FILE       the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json              print the RunResult as one JSON object on stdout
  -h, --help              show this help

Refused (exit 2, code run_not_resumable, with the reason and the fix): a run that succeeded, a
run whose process is still running it, a config or pack that changed (without --force), a
workspace that is gone.

Exit codes: as fabric run: 0 succeeded · 1 failed · 2 refused or usage error · 3 max_steps
            4 no usable model or backend · 5 parked again, awaiting an approval
            (--on-approval park) · 130 cancelled (Ctrl-C)

Example:
  fabric resume 20260101T120000Z-3f2a --max-steps 10
`;

/** `fabric resume`. */
export async function resumeCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('resume', argv, {
    'max-steps': { type: 'string' },
    force: { type: 'boolean' },
    'on-approval': { type: 'string' },
    repo: { type: 'string' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RESUME_HELP);
    return EXIT.ok;
  }
  const run = positionals[0];
  if (run === undefined || positionals.length > 1) {
    io.stderr.write(`fabric resume needs one RUN (a run id; \`fabric runs\` lists them).\n\n${RESUME_HELP}`);
    return EXIT.usage;
  }
  const moreSteps = positiveInt('--max-steps', values['max-steps']);
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const style = styleFor(io.stderr, io.env);
  // Inside a daemon's repository (or with --repo), its runs too; the run goes on where it is.
  const found = await runLogsSeenFrom(config, resolve(io.cwd, values.repo ?? '.')).read(run);
  const runsDir = resolve(dirname(dirname(found.location)));
  const fabric = createFabric(
    runsDir === resolve(config.runs_dir) ? config : { ...config, runs_dir: runsDir },
    {
      lifetime: 'one_shot',
      onDegraded: (message) => io.stderr.write(style.yellow(`${message}\n`)),
    },
  );
  const result = await fabric
    .resume({
      run,
      moreSteps,
      force: values.force === true,
      onApproval: onApprovalFlag(values['on-approval']),
      defaultOnApproval: io.terminal === undefined ? 'deny' : 'wait',
      ...(io.terminal === undefined
        ? {}
        : { approvalPrompt: terminalApprovalPrompt(io.terminal, io.stderr, style, io.env.USER) }),
      observers: [new ProgressReporter(io.stderr, style, { showReasoning: false })],
      signal: io.signal,
      onNotice: (message) => io.stderr.write(style.dim(`${message}\n`)),
    })
    .finally(() => fabric.close());
  if (values.json) io.stdout.write(`${JSON.stringify(result)}\n`);
  else if (result.payload) io.stdout.write(formatPayload(result.payload));
  io.stderr.write(style.dim(`runlog: ${result.runlog}\n`));
  return exitCodeForRun(result);
}

import { realpath, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { didYouMean } from '../../../domain/words.ts';
import { createCompletionDaemon, createDaemonStatusReader } from '../../../composition/daemon.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { ProgressReporter } from '../progress.ts';
import { styleFor } from '../style.ts';
import { daemonEventWriter, daemonLogLine } from './daemon-progress.ts';
import { createLogger, logFormatOf } from '../logger.ts';
import { formatStatus } from './daemon-status-format.ts';

export const DAEMON_HELP = `Usage: fabric daemon [options]
       fabric daemon status [--repo DIR] [--json]

Works through a repository's OpenSpec change sets (openspec/changes/<id>/tasks.md) one task at a
time: a rust-specialist run implements the task, the validation commands (daemon.validate in the
config; default: cargo build, cargo test) run in the sandbox, and a validated task is ticked in
tasks.md and committed with its work (one commit per task, with Fabric-Run: <run_id> and
Fabric-Model: <model> trailers).
The validation runs at HEAD before a change's first task: tests failing there are reported as
pre-existing, never blamed on a task; only a regression (a test that passed at HEAD) or a build
error fails an attempt. A failing validation runs once more first: a test that then passes is
labelled flaky. A run that changes nothing but tasks.md is a failed attempt.
A task that fails is tried again with the failure as feedback, from where the last attempt left
the tree; after --max-attempts it is blocked: the tree goes back to the last commit, its change
stops and the others go on. When no model is reachable no attempt is spent: the daemon waits
(backoff doubling up to the interval) and says so.
A call the policy says to ask about (policy.rules, SPEC §19) parks the task's run: its edits are
set aside (refs/fabric/parked/<run>, outside your branches and stash), the tree goes back to the
last commit, and the other changes go on. Answer it from anywhere (fabric approvals answer ID,
the viewer, POST /v1/approvals/ID); within a second the daemon brings the edits back and the run
goes on where it stopped, with no attempt spent. policy.on_approval: wait makes it wait instead,
deny refuses the call at once. fabric daemon status shows what each parked task waits for.

The repository must be a git work tree on a branch with nothing uncommitted: the daemon never
discards a change it did not make. One daemon per repository. Its state is kept under the runs
directory (and in control.daemon_tasks), never in the work tree: a runs directory inside it is
replaced by .git/fabric/runs. A refused start changes no state.

Options:
      --repo DIR          the repository (default: the working directory)
      --change ID         only this change (repeatable; default: every change, in name order)
      --once              work through what is pending, then exit (0: nothing blocked, 1: some blocked,
                          5: none blocked but some waiting for approval); no model for
                          daemon.backend_wait_s (default 300): exit 4
      --interval S        seconds between scans (OPEN_SPEC_DAEMON_INTERVAL, default 300); caps the backoff
      --max-attempts N    attempts per task and model before it is blocked (default 3; with
                          daemon.models, each model in turn gets N attempts)
      --retry-blocked     try blocked tasks again (a task whose text changed is retried anyway)
      --archive           archive a change whose last task is done and that openspec validate
                          --strict accepts (openspec archive, in a commit of its own)
  -m, --model ID          the model to ask for (LM_STUDIO_MODEL; default: the specialist's, or
                          daemon.models: a list from cheapest to strongest, tried in turn; or
                          auto: the local models measured able by \`fabric models probe\`, best
                          first, a hosted model only when named in the list, after them)
  -c, --config FILE       the config file
      --json              one JSON line per event on stdout (progress stays on stderr)
      --log-format F      text (default; log_format in the config) or json: the progress on stderr
                          as one JSON object a line (time, level, msg, run_id), without the steps
  -h, --help              show this help

Status (\`fabric daemon status\`): tasks done / pending / blocked per change, attempts, success
rates, time and tokens per task, files and lines changed, tests passed, clippy warnings before
and after (where sandbox.allowed_commands allows cargo clippy), backend health; --json prints
{ changes: [{ id, done, pending, blocked, awaiting_approval, tasks }], stats, backend }; a task
awaiting approval carries approval: { id, call, run_id }.

With openspec (OpenSpec's CLI) on the PATH, a change whose last task is done is checked with
openspec validate --strict, and the result reported.

Environment: LM_STUDIO_URL (the server or servers), LM_STUDIO_MODEL, OPEN_SPEC_DAEMON_INTERVAL.
SIGINT/SIGTERM cancel the current run, restore the tree to the last commit and exit (130).

Exit codes: 0 done (nothing blocked) · 1 a task is blocked · 2 usage, config or repository problem
            4 --once and no model for daemon.backend_wait_s · 5 --once and a task awaits approval
            130 cancelled

Example:
  cd my-compositor && fabric daemon --once --change add-damage-tracking
`;

/** `fabric daemon` and `fabric daemon status`. */
export async function daemonCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parse(argv);
  if (values.help) {
    io.stdout.write(DAEMON_HELP);
    return EXIT.ok;
  }
  const [sub, ...extra] = positionals;
  if ((sub !== undefined && sub !== 'status') || extra.length > 0) {
    const word = sub !== undefined && sub !== 'status' ? sub : (extra[0] ?? '');
    throw new FabricError(
      'usage',
      `Unknown argument "${word}".${didYouMean(word, ['status'])} See \`fabric daemon --help\`.`,
    );
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const repo = await repoDir(resolve(io.cwd, values.repo ?? '.'));
  if (sub === 'status') {
    const status = await createDaemonStatusReader(config.runs_dir).read(repo);
    io.stdout.write(values.json ? `${JSON.stringify(status)}\n` : formatStatus(status));
    return EXIT.ok;
  }
  const intervalS = positiveInt('--interval', values.interval) ?? config.daemon.interval_s;
  const maxAttempts = positiveInt('--max-attempts', values['max-attempts']) ?? config.daemon.max_attempts;
  const logFormat = logFormatOf(values['log-format'], config.log_format);
  // A JSON log carries the daemon's events, uncoloured; a run's step-by-step progress is for a person.
  const logger =
    logFormat === 'json' ? createLogger({ command: 'daemon', format: 'json', stream: io.stderr }) : null;
  const style = styleFor(io.stderr, logger === null ? io.env : { ...io.env, NO_COLOR: '1' });
  const daemon = await createCompletionDaemon(config, {
    repo,
    model: values.model ?? config.daemon.model,
    modelFrom: modelFrom(values.model, io.env, config.source),
    observers: () => (logger === null ? [new ProgressReporter(io.stderr, style)] : []),
    onEvent: daemonEventWriter(
      io.stdout,
      logger === null ? (line) => io.stderr.write(`${line}\n`) : daemonLogLine(logger),
      style,
      values.json === true,
    ),
    onDegraded: (message) =>
      logger === null ? io.stderr.write(style.yellow(`${message}\n`)) : logger.warn(message),
    options: {
      changes: values.change ?? [],
      once: values.once === true,
      intervalMs: intervalS * 1000,
      maxAttempts,
      retryBlocked: values['retry-blocked'] === true,
      // --model names one model; otherwise daemon.models escalates, cheapest first.
      models: values.model === undefined ? (config.daemon.models ?? []) : [],
      validationReruns: config.daemon.validation_reruns,
      backendWaitMs: config.daemon.backend_wait_s * 1000,
      archive: values.archive === true,
    },
  });
  const outcome = await daemon.run(io.signal);
  if (outcome.cancelled) return EXIT.cancelled;
  if (outcome.blocked > 0) return EXIT.runFailed;
  return outcome.awaitingApproval > 0 ? EXIT.awaitingApproval : EXIT.ok;
}

/** Where the daemon's model came from, as its runs' model reason names it (flag, environment, file). */
function modelFrom(flag: string | undefined, env: CliIo['env'], source: string): string {
  if (flag !== undefined) return '--model';
  // The loader lets LM_STUDIO_MODEL override daemon.model in the file.
  if (env.LM_STUDIO_MODEL) return 'LM_STUDIO_MODEL';
  return `daemon.model (${source})`;
}

function parse(argv: readonly string[]) {
  return parseCommandArgs('daemon', argv, {
    repo: { type: 'string' },
    change: { type: 'string', multiple: true },
    once: { type: 'boolean' },
    interval: { type: 'string' },
    'max-attempts': { type: 'string' },
    'retry-blocked': { type: 'boolean' },
    archive: { type: 'boolean' },
    model: { type: 'string', short: 'm' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    'log-format': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
}

async function repoDir(path: string): Promise<string> {
  const info = await stat(path).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) {
    throw new FabricError(
      'usage',
      `--repo: ${path} ${info === undefined ? 'does not exist' : 'is not a directory'}.`,
    );
  }
  return realpath(path);
}

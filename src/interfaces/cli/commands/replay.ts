import { resolve } from 'node:path';
import type { ReplayComparison } from '../../../application/replay/compare-replay.ts';
import type { RunLogContents } from '../../../application/ports.ts';
import type { RunLogReader } from '../../../application/runs/run-read-model.ts';
import { runLogsSeenFrom } from '../../../composition/control-store.ts';
import {
  type Timeline,
  type TimelineTone,
  buildTimeline,
} from '../../../application/replay/replay-timeline.ts';
import { requireWholeRun } from '../../../application/runs/whole-run.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError } from '../../../domain/errors.ts';
import { showText } from '../../../domain/show-argv.ts';
import { Fabric } from '../../../composition/fabric.ts';
import { type ReplaySummary, runStartOf } from '../../../application/replay/replay-run.ts';
import { createRunReplay } from '../../../composition/replay.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { ProgressReporter } from '../progress.ts';
import { type Style, styleFor } from '../style.ts';
import { plural } from '../../../domain/words.ts';

export const REPLAY_HELP = `Usage: fabric replay RUN [--json]
       fabric replay RUN --execute [--workspace DIR] [--keep] [--json]

RUN is a run id, a unique prefix of one, or a runlog path.

Without --execute: prints the run as a timeline, one line per runlog line: the time since the
start, the step, and what happened (model turns, tool calls and their results, rejected
finishes, retries), then the totals.

With --execute: re-runs the loop in a fresh copy of the workspace, answering each model request
with the next recorded model turn (no model is asked), and runs the tools for real. Every tool
call whose result differs from the log is reported, and so is a different final status.
Timestamps, durations, run ids and the workspace's path are not compared.
  - The copy is made in a temp directory, of everything but target/ (so cargo starts clean;
    .git/ is kept, a tool may read it), and removed afterwards unless --keep is given.
  - The workspace copied is the one in the run's run_start line, unless --workspace names
    another. The run changed its workspace, so give --workspace a pristine copy of what the run
    started from (e.g. a checkout of the same commit).
  - The pack is built from the current config; max_steps and the time budget are the run's.
  - The re-run's runlog is kept in memory, not written under runs/: a replay is a check, not
    a new run.

Options:
  -x, --execute         re-run the recorded model turns with real tools and compare
  -w, --workspace DIR   the workspace to copy for --execute (default: the run's)
      --keep            keep the workspace copy after --execute and print where it is
      --repo DIR        find RUN among a daemon's runs in this repository too (default: the
                        working directory's; a daemon keeps them in .git/fabric/runs)
  -c, --config FILE     the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --json            print JSON on stdout
  -h, --help            show this help

Exit codes: 0 timeline shown, or the re-run matched the log · 1 the re-run differs
            2 usage or config error, or no such run · 130 cancelled (Ctrl-C)
`;

/** `fabric replay`. */
export async function replayCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('replay', argv, {
    execute: { type: 'boolean', short: 'x' },
    workspace: { type: 'string', short: 'w' },
    keep: { type: 'boolean' },
    repo: { type: 'string' },
    config: { type: 'string', short: 'c' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(REPLAY_HELP);
    return EXIT.ok;
  }
  const [ref, ...extra] = positionals;
  if (ref === undefined || extra.length > 0) {
    io.stderr.write(`fabric replay needs exactly one RUN.\n\n${REPLAY_HELP}`);
    return EXIT.usage;
  }
  if (!values.execute && (values.workspace !== undefined || values.keep)) {
    throw new FabricError('usage', '--workspace and --keep apply only with --execute.');
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const fabric = new Fabric(config);
  // Inside a daemon's repository (or with --repo), its runs too: they live in its git directory.
  const runLogs = runLogsSeenFrom(config, resolve(io.cwd, values.repo ?? '.'));
  const run = await readRun(runLogs, ref.includes('/') ? resolve(io.cwd, ref) : ref);
  const style = styleFor(io.stdout, io.env);
  if (!values.execute) {
    const timeline = buildTimeline(run);
    if (values.json) io.stdout.write(`${JSON.stringify({ runlog: run.location, ...timeline })}\n`);
    else io.stdout.write(renderTimeline(timeline, run.location, style));
    return EXIT.ok;
  }
  const source = values.workspace ?? runStartOf(run).workspace;
  if (values.workspace === undefined && source !== null) {
    // The run edited its workspace in place, so a re-run from it starts from the run's end state.
    io.stderr.write(
      `fabric replay: no --workspace, so the re-run works on a copy of ${source} as it is now, which already ` +
        "holds the run's edits: results may differ from the run's. To compare faithfully, pass " +
        '--workspace DIR with a pristine checkout of what the run started from.\n',
    );
  }
  const report = await createRunReplay(fabric).execute(run, {
    source: source === null ? null : resolve(io.cwd, source),
    keep: Boolean(values.keep),
    observers: [new ProgressReporter(io.stderr, styleFor(io.stderr, io.env))],
    signal: io.signal,
  });
  if (report.cancelled) {
    io.stderr.write('fabric replay: cancelled; nothing was compared.\n');
    return EXIT.cancelled;
  }
  const { comparison } = report;
  if (values.json) {
    const { runId: run_id, location: runlog, torn } = run;
    io.stdout.write(
      `${JSON.stringify({ run_id, runlog, torn, ...comparison, replay: report.replay, workspace: report.workspace })}\n`,
    );
  } else {
    io.stdout.write(renderComparison(comparison, run, report.replay, style));
    if (report.workspace.kept) io.stdout.write(`workspace copy kept at ${report.workspace.copy}\n`);
  }
  return comparison.identical ? EXIT.ok : EXIT.runFailed;
}

/** Exit 1 means "the re-run differs" here; run_not_found and runlog_corrupt exit 2. */
async function readRun(runLogs: Pick<RunLogReader, 'read'>, ref: string): Promise<RunLogContents> {
  const run = await runLogs.read(ref);
  requireWholeRun(run);
  return run;
}

function renderTimeline(timeline: Timeline, location: string, s: Style): string {
  const paint: Record<TimelineTone, (text: string) => string> = {
    info: s.bold,
    call: s.cyan,
    ok: s.green,
    error: s.red,
    warn: s.yellow,
    dim: s.dim,
  };
  const lines = [s.bold(`run ${timeline.run_id}`) + s.dim(` · ${location}`)];
  for (const entry of timeline.entries) {
    const offset = `+${(entry.offset_ms / 1000).toFixed(2)}s`.padStart(9);
    const label = entry.step === null ? `${entry.kind} ` : `[${entry.step}]`;
    // The timeline escapes what it quotes; this also covers any text an event carries raw.
    lines.push(`${s.dim(offset)}  ${label} ${paint[entry.tone](showText(entry.text))}`);
  }
  const t = timeline.totals;
  lines.push(
    `${t.status} · ${plural(t.steps, 'step')} · ${plural(t.usage.total_tokens, 'token')} · ${plural(t.tool_calls, 'tool call')}, ` +
      `${plural(t.tool_errors, 'tool error')}, ${plural(t.finish_rejected, 'rejected finish', 'rejected finishes')}, ${plural(t.retries, 'retry', 'retries')} · ` +
      `${(t.duration_ms / 1000).toFixed(2)} s`,
  );
  if (t.status === 'running')
    lines.push(s.yellow('the runlog has no run_end: the run is still going, or was killed'));
  if (timeline.torn)
    lines.push(s.yellow('the runlog ends with a torn line: the process was killed while writing'));
  return `${lines.join('\n')}\n`;
}

function renderComparison(
  comparison: ReplayComparison,
  run: RunLogContents,
  replay: ReplaySummary,
  s: Style,
): string {
  const turns = `${replay.turns_used} of ${plural(replay.turns_recorded, 'recorded model turn')}`;
  if (comparison.identical) {
    return `${s.green('no differences')}: ${plural(comparison.compared, 'tool call')} answered as in run ${run.runId} (${turns}); the re-run ended ${replay.status} again.\n`;
  }
  const lines = [
    `${s.red(`${plural(comparison.differences.length, 'difference')} from run ${run.runId}`)} (${turns}):`,
  ];
  for (const d of comparison.differences) {
    const where = d.step === null ? `the run's ${d.what}` : `[${d.step}] ${d.tool} (${d.call_id})`;
    lines.push(
      `  ${s.bold(`${where}: ${HOW[d.what]}`)}`,
      `    original: ${indent(d.original)}`,
      `    replayed: ${indent(d.replayed)}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

const HOW: Record<ReplayComparison['differences'][number]['what'], string> = {
  tool_result: 'the tool result differs',
  missing: 'not run by the re-run',
  extra: 'run only by the re-run',
  status: 'differs',
  payload: 'differs',
};

function indent(text: string): string {
  return text.replace(/\n/g, '\n              ');
}

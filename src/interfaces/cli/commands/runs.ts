import { resolve } from 'node:path';
import { requireWholeRun } from '../../../application/runs/whole-run.ts';
import type { ControlStore } from '../../../application/control/control-ports.ts';
import type { LivenessCheck } from '../../../application/runs/liveness-ports.ts';
import { RunReadModel } from '../../../application/runs/run-read-model.ts';
import { type RunRecord, newestStartFirst } from '../../../application/runs/run-record.ts';
import { loadConfig } from '../../../config/load.ts';
import { errorMessage } from '../../../domain/errors.ts';
import { controlStoreFor, localLiveness, runLogsSeenFrom } from '../../../composition/control-store.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { didYouMean, plural } from '../../../domain/words.ts';
import { type ListedRun, durationMs, finishGateRows, runDetails } from './run-details.ts';

export const RUNS_HELP = `Usage: fabric runs [list] [--limit N] [--json]
       fabric runs show RUN [--json]

Lists runs, newest first: the control plane's and the runlogs under <runs_dir>, merged (the
runlogs alone when the control plane cannot be reached). A run whose process died before it
ended is \`interrupted\`. \`show\` prints one run: status, specialist, model, steps, tokens,
duration, error and result, and where its runlog is (or, for a run another host ran, that the
control plane holds it); RUN is a run id, a unique prefix of one, or a runlog path.
\`fabric replay RUN\` shows its timeline.

Options:
  -n, --limit N       how many runs to list (default 20)
      --repo DIR      also a daemon's runs in this repository (default: the working directory's;
                      a daemon keeps its runs in the repository's .git/fabric/runs)
  -c, --config FILE   the config file
      --json          print JSON
  -h, --help          show this help
`;

/** The runlogs a command reads: the read model's reader, and where they are. */
type RunLogs = ReturnType<typeof runLogsSeenFrom>;

/** `fabric runs`. */
export async function runsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('runs', argv, {
    config: { type: 'string', short: 'c' },
    repo: { type: 'string' },
    limit: { type: 'string', short: 'n' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RUNS_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  // Inside a daemon's repository (or with --repo), its runs too: they live in its git directory.
  const runLogs = runLogsSeenFrom(config, resolve(io.cwd, values.repo ?? '.'));
  const check: LivenessCheck = { liveness: localLiveness(), now: new Date() };
  const [action = 'list', ref] = positionals;
  if (action === 'show') {
    if (!ref) {
      io.stderr.write(`fabric runs show needs a RUN.\n\n${RUNS_HELP}`);
      return EXIT.usage;
    }
    const shown = await showRun(config, runLogs, ref, check);
    if (values.json)
      io.stdout.write(`${JSON.stringify({ ...shown.json, duration_ms: durationMs(shown.summary) })}\n`);
    else io.stdout.write(runDetails(shown.summary, shown.where));
    return EXIT.ok;
  }
  if (action !== 'list') {
    io.stderr.write(
      `fabric runs: unknown action "${action}".${didYouMean(action, ['list', 'show'])}\n\n${RUNS_HELP}`,
    );
    return EXIT.usage;
  }
  const limit = positiveInt('--limit', values.limit) ?? 20;
  const listing = await listRuns(config, runLogs, limit, check);
  if (values.json) {
    io.stdout.write(`${JSON.stringify(listing)}\n`);
    return EXIT.ok;
  }
  const { source, runs, notice } = listing;
  if (runs.length === 0) io.stdout.write(`No runs yet in ${runLogs.runsDirs.join(' or ')}.\n`);
  for (const run of runs) io.stdout.write(`${describe(run)}\n`);
  io.stderr.write(
    `(${plural(runs.length, 'run')}, from ${source}${notice === undefined ? '' : `; ${notice}`})\n`,
  );
  return EXIT.ok;
}

/**
 * The read model over the runlogs and the control store, which is opened (and migrated) only
 * when the read model asks for it; `opened` is that store, to name and close.
 */
function readModel(
  runLogs: RunLogs,
  open: () => Promise<ControlStore | null>,
  check: LivenessCheck,
): { runs: RunReadModel; opened: () => ControlStore | null } {
  let store: Promise<ControlStore | null> | undefined;
  let opened: ControlStore | null = null;
  const control = async () => {
    store ??= open().then((made) => {
      opened = made;
      return made;
    });
    const made = await store;
    await made?.migrate();
    return made;
  };
  return {
    runs: new RunReadModel({ runLogs, check: () => check, control, controlListing: control }),
    opened: () => opened,
  };
}

/** One run: from its runlog here, or else (a run another host ran) from the control store. */
async function showRun(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: RunLogs,
  ref: string,
  check: LivenessCheck,
): Promise<{ summary: ListedRun; json: Record<string, unknown>; where: [string, string][] }> {
  // Asked only when the runlogs have no such run; a store that is down leaves the runlog's answer.
  // Showing only reads: an embedded database that does not exist yet is not created for an unknown id.
  const { runs, opened } = readModel(runLogs, () => controlStoreFor(config, { existingOnly: true }), check);
  try {
    const { record, events } = await runs.read(ref);
    const summary = summaryOf(record);
    const json = { ...summary, runlog: record.runlog, torn: record.torn };
    if (record.runlog === null) {
      const store = opened();
      const source = store === null ? 'control plane' : `${store.kind} ${store.location}`;
      return {
        summary,
        json,
        where: [['runlog', `none on this machine; the record is the control plane's (${source})`]],
      };
    }
    requireWholeRun({ location: record.runlog, events, torn: record.torn });
    const where: [string, string][] = [
      ...finishGateRows(events),
      ['runlog', `${record.runlog}${record.torn ? ' (torn last line)' : ''}`],
    ];
    if (summary.owner !== null) where.push(['process', `${summary.owner.pid} on ${summary.owner.host}`]);
    // The server's build and what read the model's calls, as it reported them (quirks-2 Q33, Q34).
    const start = events.find((event) => event.kind === 'run_start');
    if (start?.kind === 'run_start' && start.server_build !== undefined)
      where.push(['server', start.server_build]);
    if (start?.kind === 'run_start' && start.tool_parser !== undefined)
      where.push(['tool parser', start.tool_parser]);
    return { summary, json, where };
  } finally {
    await opened()
      ?.close()
      .catch(() => {});
  }
}

/** A listing and where it came from. */
interface RunListing {
  readonly source: string;
  readonly runs: ListedRun[];
  /** Why the control store was not used, when it is enabled and could not be read. */
  readonly notice?: string;
}

/**
 * The control store's rows merged with the runlogs on disk, newest first, as the read model lists
 * them: a run in either is listed once (SPEC §7: a run another process wrote while
 * this one could not reach the store is still listed).
 */
async function listRuns(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: RunLogs,
  limit: number,
  check: LivenessCheck,
): Promise<RunListing> {
  // Listing never creates the embedded database: without one, the runlogs are the whole record.
  const store = await controlStoreFor(config, { existingOnly: true });
  try {
    const { runs: model } = readModel(runLogs, async () => store, check);
    const page = await model.list({ limit });
    const runs = [...page.runs].sort(newestStartFirst).map(summaryOf);
    const logs = `runlogs in ${runLogs.runsDirs.join(' and ')}`;
    if (store === null) return { source: logs, runs };
    if (page.controlError !== undefined) {
      // Another process holds the embedded database, or the server is down: the runlogs are the record.
      const notice = `the control plane (${store.kind} ${store.location}) is not available: ${errorMessage(page.controlError)}`;
      return { source: logs, runs, notice };
    }
    return { source: `${store.kind} ${store.location} and ${logs}`, runs };
  } finally {
    await store?.close().catch(() => {});
  }
}

/** What `fabric runs` prints of a run (its JSON shape is stable). */
function summaryOf(record: RunRecord): ListedRun {
  const { usage: _usage, runlog: _runlog, torn: _torn, live: _live, source: _source, ...summary } = record;
  return summary;
}

function describe(run: ListedRun): string {
  const task = (run.task ?? '').replace(/\s+/g, ' ');
  const short = task.length > 60 ? `${task.slice(0, 60)}…` : task;
  return `${run.run_id}  ${run.status.padEnd(11)} ${String(run.steps).padStart(3)} ${run.steps === 1 ? 'step ' : 'steps'}  ${run.specialist ?? '?'}  ${short}`;
}

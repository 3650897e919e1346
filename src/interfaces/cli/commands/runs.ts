import { requireWholeRun } from '../../../application/whole-run.ts';
import type { ControlRunRow } from '../../../application/control-ports.ts';
import type { LivenessCheck } from '../../../application/process-liveness.ts';
import { type RunSummary, type RunSummaryStatus, summarizeRun } from '../../../application/run-summary.ts';
import { loadConfig } from '../../../config/load.ts';
import { FabricError, errorMessage } from '../../../domain/errors.ts';
import { FileRunLogStore } from '../../../infrastructure/runlog/file-run-log-store.ts';
import { LocalProcessLiveness } from '../../../infrastructure/runlog/process-liveness.ts';
import { controlStoreFor } from '../../control-plane.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { didYouMean, plural } from '../../../domain/words.ts';
import { durationMs, runDetails } from './run-details.ts';

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
  -c, --config FILE   the config file
      --json          print JSON
  -h, --help          show this help
`;

/** `fabric runs`. */
export async function runsCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('runs', argv, {
    config: { type: 'string', short: 'c' },
    limit: { type: 'string', short: 'n' },
    json: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(RUNS_HELP);
    return EXIT.ok;
  }
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const runLogs = new FileRunLogStore(config.runs_dir);
  const check: LivenessCheck = { liveness: new LocalProcessLiveness(), now: new Date() };
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
  if (runs.length === 0) io.stdout.write(`No runs yet in ${config.runs_dir}.\n`);
  for (const run of runs) io.stdout.write(`${describe(run)}\n`);
  io.stderr.write(
    `(${plural(runs.length, 'run')}, from ${source}${notice === undefined ? '' : `; ${notice}`})\n`,
  );
  return EXIT.ok;
}

/** One run: from its runlog here, or else (a run another host ran) from the control store. */
async function showRun(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: FileRunLogStore,
  ref: string,
  check: LivenessCheck,
): Promise<{ summary: RunSummary; json: Record<string, unknown>; where: [string, string][] }> {
  let notFound: FabricError;
  try {
    const contents = await runLogs.read(ref);
    requireWholeRun(contents);
    const summary = summarizeRun(contents.runId, contents.events, check);
    const where: [string, string][] = [
      ['runlog', `${contents.location}${contents.torn ? ' (torn last line)' : ''}`],
    ];
    if (summary.owner !== null) where.push(['process', `${summary.owner.pid} on ${summary.owner.host}`]);
    return { summary, json: { ...summary, runlog: contents.location, torn: contents.torn }, where };
  } catch (error) {
    if (!(error instanceof FabricError) || error.code !== 'run_not_found') throw error;
    notFound = error;
  }
  const store = await controlStoreFor(config).catch(() => null);
  if (store === null) throw notFound;
  try {
    await store.migrate();
    const row = await store.getRun(ref);
    if (row === null) throw notFound;
    const stored = fromRow(row);
    const judged =
      stored.status === 'running' ? summarizeRun(row.id, await store.runEvents(row.id), check) : null;
    const summary = judged !== null && judged.status !== 'running' ? judged : stored;
    const source = `${store.kind} ${store.location}`;
    return {
      summary,
      json: { ...summary, runlog: null, torn: false },
      where: [['runlog', `none on this machine; the record is the control plane's (${source})`]],
    };
  } catch (error) {
    // The store is down or held by another process: the runlog's answer stands.
    if (error === notFound) throw error;
    throw new FabricError(
      'run_not_found',
      `${notFound.message} (The control plane could not be asked: ${errorMessage(error)}.)`,
    );
  } finally {
    await store.close().catch(() => {});
  }
}

/** A listing and where it came from. */
interface RunListing {
  readonly source: string;
  readonly runs: RunSummary[];
  /** Why the control store was not used, when it is enabled and could not be read. */
  readonly notice?: string;
}

/**
 * The control store's rows merged with the runlogs on disk, newest first: a run in either is
 * listed once (SPEC §7: a run another process wrote while this one could not reach the store is
 * still listed). Where the store says `running`, the runlog (or, with none here, the events the
 * store holds) decides whether it is still running, ended, or interrupted.
 */
async function listRuns(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: FileRunLogStore,
  limit: number,
  check: LivenessCheck,
): Promise<RunListing> {
  const localIds = await runLogs.list();
  const byId = new Map<string, RunSummary>();
  const fromStore = await storeRuns(config, runLogs, new Set(localIds), limit, check);
  for (const run of fromStore.runs) byId.set(run.run_id, run);
  for (const id of localIds.slice(0, limit)) {
    if (byId.has(id)) continue;
    const run = await runlogSummary(runLogs, id, check);
    // The id inside the lines is the run's key, whatever its directory is called.
    if (run !== null && !byId.has(run.run_id)) byId.set(run.run_id, run);
  }
  const runs = [...byId.values()].sort(newestFirst).slice(0, limit);
  const logs = `runlogs in ${runLogs.runsDir}`;
  if (fromStore.source === null)
    return { source: logs, runs, ...(fromStore.notice === undefined ? {} : { notice: fromStore.notice }) };
  return { source: `${fromStore.source} and ${logs}`, runs };
}

/** The store's newest runs, with those it has as `running` judged again; none when it cannot be read. */
async function storeRuns(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: FileRunLogStore,
  localIds: ReadonlySet<string>,
  limit: number,
  check: LivenessCheck,
): Promise<{ source: string | null; runs: RunSummary[]; notice?: string }> {
  // Listing never creates the embedded database: without one, the runlogs are the whole record.
  const store = await controlStoreFor(config, { existingOnly: true });
  if (store === null) return { source: null, runs: [] };
  try {
    await store.migrate();
    const runs: RunSummary[] = [];
    for (const row of await store.listRuns({ limit })) {
      const stored = fromRow(row);
      if (stored.status !== 'running') {
        runs.push(stored);
        continue;
      }
      const judged = localIds.has(row.id)
        ? await runlogSummary(runLogs, row.id, check)
        : summarizeRun(row.id, await store.runEvents(row.id), check);
      runs.push(judged !== null && judged.status !== 'running' ? judged : stored);
    }
    return { source: `${store.kind} ${store.location}`, runs };
  } catch (error) {
    // Another process holds the embedded database, or the server is down: the runlogs are the record.
    return {
      source: null,
      runs: [],
      notice: `the control plane (${store.kind} ${store.location}) is not available: ${errorMessage(error)}`,
    };
  } finally {
    await store.close().catch(() => {});
  }
}

async function runlogSummary(
  runLogs: FileRunLogStore,
  id: string,
  check: LivenessCheck,
): Promise<RunSummary | null> {
  try {
    const contents = await runLogs.read(id);
    return summarizeRun(contents.runId, contents.events, check);
  } catch {
    // An unreadable runlog is skipped here; `fabric runs show` explains it.
    return null;
  }
}

function fromRow(row: ControlRunRow): RunSummary {
  return {
    run_id: row.id,
    specialist: row.specialist,
    task: row.task,
    model: row.model,
    backend: row.backend,
    status: row.status as RunSummaryStatus,
    started_at: row.started_at,
    ended_at: row.ended_at,
    steps: row.steps ?? 0,
    total_tokens: row.total_tokens ?? 0,
    payload: row.payload,
    error: row.error,
    events: 0,
    owner: null,
  };
}

/** Newest start first, runs without a start last; the id (which starts with a timestamp) breaks ties. */
function newestFirst(a: RunSummary, b: RunSummary): number {
  if (a.started_at !== b.started_at) {
    if (a.started_at === null) return 1;
    if (b.started_at === null) return -1;
    const order = Date.parse(b.started_at) - Date.parse(a.started_at);
    if (order !== 0 && !Number.isNaN(order)) return order;
  }
  return a.run_id < b.run_id ? 1 : a.run_id > b.run_id ? -1 : 0;
}

function describe(run: RunSummary): string {
  const task = (run.task ?? '').replace(/\s+/g, ' ');
  const short = task.length > 60 ? `${task.slice(0, 60)}…` : task;
  return `${run.run_id}  ${run.status.padEnd(11)} ${String(run.steps).padStart(3)} ${run.steps === 1 ? 'step ' : 'steps'}  ${run.specialist ?? '?'}  ${short}`;
}

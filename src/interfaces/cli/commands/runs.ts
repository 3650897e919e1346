import type { RunSummary } from '../../../application/run-summary.ts';
import { summarizeRun } from '../../../application/run-summary.ts';
import { loadConfig } from '../../../config/load.ts';
import { FileRunLogStore } from '../../../infrastructure/runlog/file-run-log-store.ts';
import { controlStoreFor } from '../../control-plane.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';

export const RUNS_HELP = `Usage: fabric runs [list] [--limit N] [--json]
       fabric runs show RUN [--json]

Lists past runs, newest first: from the control plane when it is reachable, else from the
runlogs under <runs_dir>. \`show\` prints one run's summary and where its runlog is; RUN is a run
id, a unique prefix of one, or a runlog path. \`fabric replay RUN\` shows its timeline.

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
  const [action = 'list', ref] = positionals;
  if (action === 'show') {
    if (!ref) {
      io.stderr.write(`fabric runs show needs a RUN.\n\n${RUNS_HELP}`);
      return EXIT.usage;
    }
    const contents = await runLogs.read(ref);
    const summary = summarizeRun(contents.runId, contents.events);
    if (values.json)
      io.stdout.write(`${JSON.stringify({ ...summary, runlog: contents.location, torn: contents.torn })}\n`);
    else
      io.stdout.write(
        `${describe(summary)}\n  runlog:  ${contents.location}${contents.torn ? ' (torn last line)' : ''}\n`,
      );
    return EXIT.ok;
  }
  if (action !== 'list') {
    io.stderr.write(`fabric runs: unknown action "${action}".\n\n${RUNS_HELP}`);
    return EXIT.usage;
  }
  const limit = positiveInt('--limit', values.limit) ?? 20;
  const { source, runs } = await listRuns(config, runLogs, limit);
  if (values.json) {
    io.stdout.write(`${JSON.stringify({ source, runs })}\n`);
    return EXIT.ok;
  }
  if (runs.length === 0) io.stdout.write(`No runs yet in ${config.runs_dir}.\n`);
  for (const run of runs) io.stdout.write(`${describe(run)}\n`);
  io.stderr.write(`(${runs.length} run(s), from ${source})\n`);
  return EXIT.ok;
}

async function listRuns(
  config: Awaited<ReturnType<typeof loadConfig>>,
  runLogs: FileRunLogStore,
  limit: number,
): Promise<{ source: string; runs: RunSummary[] }> {
  const store = controlStoreFor(config);
  if (store) {
    try {
      await store.migrate();
      const rows = await store.listRuns({ limit });
      if (rows.length > 0) {
        return {
          source: `${store.kind} ${store.location}`,
          runs: rows.map((row) => ({
            run_id: row.id,
            specialist: row.specialist,
            task: row.task,
            model: row.model,
            backend: row.backend,
            status: row.status as RunSummary['status'],
            started_at: row.started_at,
            ended_at: row.ended_at,
            steps: row.steps ?? 0,
            total_tokens: row.total_tokens ?? 0,
            payload: row.payload,
            error: row.error,
            events: 0,
          })),
        };
      }
    } catch {
      // The database is off or busy: the runlogs are the record.
    } finally {
      await store.close().catch(() => {});
    }
  }
  const ids = (await runLogs.list()).slice(0, limit);
  const runs: RunSummary[] = [];
  for (const id of ids) {
    try {
      runs.push(summarizeRun(id, (await runLogs.read(id)).events));
    } catch {
      // An unreadable runlog is skipped here; `fabric runs show` explains it.
    }
  }
  return { source: `runlogs in ${runLogs.runsDir}`, runs };
}

function describe(run: RunSummary): string {
  const task = (run.task ?? '').replace(/\s+/g, ' ');
  const short = task.length > 60 ? `${task.slice(0, 60)}…` : task;
  return `${run.run_id}  ${run.status.padEnd(9)} ${String(run.steps).padStart(3)} step(s)  ${run.specialist ?? '?'}  ${short}`;
}

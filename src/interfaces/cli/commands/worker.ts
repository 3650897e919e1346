import { loadConfig } from '../../../config/load.ts';
import { FabricError, errorMessage } from '../../../domain/errors.ts';
import { type Fabric, createFabric } from '../../../composition/fabric.ts';
import { workerMetrics } from '../../../composition/telemetry.ts';
import { listenMetrics } from '../../http/metrics-listener.ts';
import type { ListeningServer } from '../../http/serve.ts';
import { composeQueueWorker } from '../../../composition/worker.ts';
import { parseCommandArgs, positiveInt } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { createLogger, logFormatOf } from '../logger.ts';
import type { WorkerLog } from '../../../application/queue/queue-ports.ts';

export const WORKER_HELP = `Usage: fabric worker [--concurrency N] [--specialists a,b] [--config FILE] [--log-format json]

Takes runs queued in Postgres (queue: postgres, FABRIC_DSN) and runs them, until Ctrl-C or
SIGTERM. Each run writes its runlog on this host and is mirrored, event by event, to the control
plane, where \`fabric serve\` streams it. The worker heartbeats; once the lease of a worker
whose heartbeat stopped expires (worker.dead_after_s), another worker resumes its runs from
their runlogs under the same ids (a shared runs directory: FABRIC_RUNS_DIR), at most
worker.max_resumes times (default 2); past that, or with the runlog out of reach, they are
marked interrupted. A worker cut off from the database for that long stops its runs itself
(interrupted); one that finds a run taken from it writes nothing more to it. It comes back
under a new id.

With worker.metrics_port: N in the config, its Prometheus metrics (its runs, the queue's depth, the
workers alive) are served at http://127.0.0.1:N/metrics (docs/telemetry.md).

SIGTERM / Ctrl-C: stop taking runs, cancel the runs in progress (each writes run_end, status
cancelled), report the worker stopped, exit 0.

Options:
      --concurrency N      runs at once (default: worker.concurrency in the config, 1)
      --specialists a,b    take only these specialists' runs (default: every configured one)
  -c, --config FILE        the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --log-format F       text (default; log_format in the config) or json: one JSON object a line
                           on stderr, with run_id and worker_id where there is one
  -h, --help               show this help

Exit codes: 0 stopped cleanly · 2 usage or config error (no queue: postgres, unknown specialist)
`;

/** `fabric worker`: runs queued runs until `io.signal` aborts. */
export async function workerCommand(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandArgs('worker', argv, {
    concurrency: { type: 'string' },
    specialists: { type: 'string' },
    config: { type: 'string', short: 'c' },
    'log-format': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(WORKER_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0)
    throw new FabricError('usage', `fabric worker takes no arguments (got "${positionals.join(' ')}").`);
  const config = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  if (config.queue !== 'postgres')
    throw new FabricError(
      'usage',
      'fabric worker takes runs from the Postgres queue: set queue: postgres (or FABRIC_QUEUE=postgres) and FABRIC_DSN.',
    );
  const specialists = specialistsOf(values.specialists, Object.keys(config.specialists));
  const concurrency = positiveInt('--concurrency', values.concurrency) ?? config.worker.concurrency;
  const format = logFormatOf(values['log-format'], config.log_format);
  // Every line names the worker once it has its id.
  let logger = createLogger({ command: 'worker', format, stream: io.stderr });
  const log: WorkerLog = (line, fields) => logger.info(line, fields);
  const fabric = createFabric(config, {
    env: io.env,
    onDegraded: (message) => logger.warn(message),
  });
  let metricsServer: ListeningServer | undefined;
  try {
    const worker = await composeQueueWorker(fabric, { specialists, concurrency, log });
    logger = logger.with({ worker_id: worker.identity.id });
    log(`${worker.identity.id} taking runs of ${specialists.join(', ')} (concurrency ${concurrency})`);
    metricsServer = await startMetrics(fabric, config.worker.metrics_port, log);
    await worker.run(io.signal);
  } finally {
    await metricsServer?.close();
    // After every run has written its run_end: the mirror's last rows, the queue, the store.
    await fabric.close();
  }
  log('stopped');
  return EXIT.ok;
}

/** `worker.metrics_port`: its Prometheus metrics on loopback, or nothing when 0. */
async function startMetrics(
  fabric: Fabric,
  port: number,
  log: WorkerLog,
): Promise<ListeningServer | undefined> {
  if (port === 0) return undefined;
  const queue = await fabric.runQueue();
  if (queue === null) return undefined;
  const metrics = await workerMetrics(fabric, queue.workers);
  const server = await listenMetrics(metrics, port).catch((error: unknown) => {
    throw new FabricError(
      'usage',
      `worker.metrics_port ${port}: cannot listen on 127.0.0.1:${port} (${errorMessage(error)}). ` +
        'Pick a free port, or 0 for no metrics listener.',
      { cause: error },
    );
  });
  log(`metrics on ${server.url}/metrics`);
  return server;
}

function specialistsOf(flag: string | undefined, configured: readonly string[]): string[] {
  if (flag === undefined) return [...configured];
  const names = flag
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !configured.includes(name));
  if (names.length === 0 || unknown.length > 0)
    throw new FabricError(
      'usage',
      `--specialists names configured specialists (${configured.join(', ') || 'none'}); unknown: ${unknown.join(', ') || '(empty list)'}.`,
    );
  return names;
}

import { loadConfig } from '../../../config/load.ts';
import { servedRunsDir } from '../../../composition/control-store.ts';
import { FabricError } from '../../../domain/errors.ts';
import { serveMetrics } from '../../../composition/telemetry.ts';
import { createFabric } from '../../../composition/fabric.ts';
import { startQueueReaper } from '../../../composition/worker.ts';
import { createApp } from '../../http/app.ts';
import { isLoopbackHost } from '../../http/auth.ts';
import { BatteryHub } from '../../http/battery-hub.ts';
import { parkedRunsFor } from '../../http/parked-resumer.ts';
import { RunHub } from '../../http/run-hub.ts';
import { listen } from '../../http/serve.ts';
import { parseCommandArgs } from '../args.ts';
import { type CliIo, EXIT } from '../io.ts';
import { createLogger, logFormatOf } from '../logger.ts';
import { plural } from '../../../domain/words.ts';

/** How often a server looks for answers given elsewhere to the approvals its parked runs wait for. */
const PARKED_POLL_MS = 1000;

export const SERVE_HELP = `Usage: fabric serve [--host 127.0.0.1] [--port 8787] [--config FILE]

Serves the HTTP API (docs/http-api.md) until Ctrl-C or SIGTERM, which cancel the runs in
progress and wait for each to write its run_end. The URL it listens on goes to stderr.

Routes (JSON; errors are { "error": { "code", "message" } }):
  POST /v1/runs                 start a run: { specialist, task, workspace?, model?, max_steps? } → 202
  GET  /v1/runs                 list runs, newest first (?limit=N, default 20)
  GET  /v1/runs/:id             a run: live status, or its result once ended
  GET  /v1/runs/:id/events      its runlog events as Server-Sent Events (resumable: Last-Event-ID)
  GET  /v1/runs/:id/runlog      its runlog.jsonl (application/x-ndjson)
  POST /v1/runs/:id/cancel      cancel a run in progress (409 when it has ended)
  POST /v1/runs/:id/replay      its timeline, or { "execute": true, workspace? } to re-run and compare
  POST /v1/runs/:id/resume      a paused run goes on; one its process left goes on from its runlog (SPEC §18)
  POST /v1/runs/:id/messages    steer it: { text, mode: steer | interrupt, expected_step? } (SPEC §19)
  POST /v1/runs/:id/pause       hold it after its current step (POST …/resume lets it go on)
  GET  /v1/approvals            the approvals (?state=pending|approved|denied|expired|cancelled|all, ?run=)
  GET  /v1/approvals/events     every approval as it is asked and answered (Server-Sent Events; ?run=)
  GET|POST /v1/approvals/:id    one approval; answer it: { decision: approve | deny, scope?, pattern?, message? }
  GET  /v1/grants               lasting grants; DELETE /v1/grants/:id revokes one
  GET  /v1/daemon               the OpenSpec daemon's status per repository (?repo=DIR)
  GET  /v1/batteries            batteries; POST to start one, /:id/events to follow it
  GET  /v1/specialists          the configured specialists
  GET  /v1/models               every backend's models, and the model each specialist would use
  GET  /v1/health               the model backends' state (open without the token)
  GET  /v1/lm-indicator         the LM indicator (offline | healthy | degraded)
  GET  /v1/exports/:name        lm_usage_7d | lm_health_7d | lm_insights_7d | lm_indicator
  *    /mcp                     the MCP server of \`fabric mcp\`, over streamable HTTP (a session per
                                client: it elicits approvals from a client that can answer them)
  GET  /metrics                 Prometheus metrics · / the viewer (runs, approvals, daemon, batteries)

Runs: inside a git work tree the server never writes into it: the default ./runs becomes
<git dir>/fabric/runs (its runs and embedded database), and the runs in ./runs are listed too.
A runs_dir or FABRIC_RUNS_DIR you set is kept (outside a daemon's repository).

Auth: with a token (FABRIC_API_TOKEN, or api.token in the config) every route but GET /v1/health
needs "Authorization: Bearer <token>". A token is required to listen beyond loopback: without
one, --host 0.0.0.0 (or any non-loopback address) refuses to start.

Options:
      --host HOST       the address to listen on (default 127.0.0.1)
  -p, --port PORT       the port (default 8787; 0 picks a free one)
  -c, --config FILE     the config file (default: FABRIC_CONFIG, ./fabric.yaml, the shipped default)
      --log-format F    text (default; log_format in the config) or json: one JSON object a line
  -h, --help            show this help

Exit codes: 0 stopped cleanly · 2 usage or config error (or no token beyond loopback)
`;

/**
 * `fabric serve`: the HTTP API, until `io.signal` aborts. `onListening` hears the URL once it
 * listens (`fabric demo --serve` prints its run's page from it).
 */
export async function serveCommand(
  argv: readonly string[],
  io: CliIo,
  onListening?: (url: string) => void,
): Promise<number> {
  const { values, positionals } = parseCommandArgs('serve', argv, {
    host: { type: 'string' },
    port: { type: 'string', short: 'p' },
    config: { type: 'string', short: 'c' },
    'log-format': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help) {
    io.stdout.write(SERVE_HELP);
    return EXIT.ok;
  }
  if (positionals.length > 0)
    throw new FabricError('usage', `fabric serve takes no arguments (got "${positionals.join(' ')}").`);
  const host = values.host ?? '127.0.0.1';
  const port = portOf(values.port ?? '8787');
  const loaded = await loadConfig({ configPath: values.config, cwd: io.cwd, env: io.env });
  const logger = createLogger({
    command: 'serve',
    format: logFormatOf(values['log-format'], loaded.log_format),
    stream: io.stderr,
  });
  // Never into a git work tree (issue 34): its `.git/fabric/runs`, the daemon's runs directory;
  // the runs directory it moved from is still read, so the runs `fabric run` wrote there show.
  const config = { ...loaded, runs_dir: servedRunsDir(loaded.runs_dir, loaded.runsDirSet) };
  const moved = config.runs_dir === loaded.runs_dir ? [] : [loaded.runs_dir];
  const token = config.api.token;
  const requireToken = !isLoopbackHost(host);
  if (requireToken && token === undefined) {
    throw new FabricError(
      'usage',
      `Refusing to listen on ${host} without a bearer token: anyone who can reach it could run tools on this machine. ` +
        'Set FABRIC_API_TOKEN (or api.token in the config), or listen on 127.0.0.1.',
    );
  }
  const log = (line: string) => logger.info(line);
  const fabric = createFabric(config, {
    env: io.env,
    onDegraded: (message) => logger.warn(message),
    alsoReads: moved,
  });
  // Opened now, not with the first run: the embedded database's holder starts backfilling
  // the runs other processes wrote (SPEC §7) as soon as it serves.
  await fabric.controlStore();
  const metrics = await serveMetrics(fabric);
  const hub = new RunHub(fabric);
  const batteries = new BatteryHub();
  // Parked runs (SPEC §19) go on once answered: here at once, elsewhere within a poll, and those
  // answered while no server ran as soon as this one listens.
  const parked = parkedRunsFor(fabric, hub, log);
  const app = createApp({ fabric, token, requireToken, hub, batteries, log, metrics, parked });
  let server: Awaited<ReturnType<typeof listen>>;
  try {
    server = await listen(app.fetch, { host, port });
  } catch (error) {
    await fabric.close();
    throw listenFailed(error, host, port);
  }
  log(`listening on ${server.url} (config ${config.source}${token === undefined ? ', no token' : ''})`);
  if (moved.length > 0)
    log(
      `runs go to ${config.runs_dir}, outside the git work tree; the runs in ${loaded.runs_dir} are listed too`,
    );
  onListening?.(server.url);
  // With the queue, the server reaps too: a dead worker's runs end with no live worker left.
  const stopReaper = startQueueReaper(fabric, log);
  const stopParked = parked.start(PARKED_POLL_MS);
  await new Promise<void>((resolve) => {
    if (io.signal.aborted) resolve();
    else io.signal.addEventListener('abort', () => resolve(), { once: true });
  });
  stopReaper();
  stopParked();
  const live = hub.list().length;
  log(`stopping${live > 0 ? `: cancelling ${plural(live, 'run')} in progress` : ''}`);
  // A cancelled battery records where it stopped: its cells not done stay resumable.
  await Promise.all([batteries.close(), hub.close()]);
  await server.close();
  // After every run has written its run_end: the mirror's last rows, then the control store.
  await fabric.close();
  log('stopped');
  return EXIT.ok;
}

function portOf(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new FabricError('usage', `--port takes a port number from 0 to 65535, not "${value}".`);
  return port;
}

/** Why the server could not listen, with what to do about it; anything else is unexpected. */
function listenFailed(error: unknown, host: string, port: number): unknown {
  // Node sets `code`; Deno names the error class (AddrInUse, PermissionDenied, AddrNotAvailable).
  const { code, name } = error as { code?: string; name?: string };
  const kind = code ?? name;
  const where = `${host}:${port}`;
  if (kind === 'EADDRINUSE' || kind === 'AddrInUse')
    return new FabricError(
      'usage',
      `Port ${port} is already in use on ${host} (another fabric serve, or another program). ` +
        'Pick another with --port N, or --port 0 for any free port.',
      { cause: error },
    );
  if (kind === 'EACCES' || kind === 'PermissionDenied')
    return new FabricError(
      'usage',
      `Not allowed to listen on ${where}: ports below 1024 need privileges. Pick a port from 1024 up with --port N.`,
      { cause: error },
    );
  if (kind === 'EADDRNOTAVAIL' || kind === 'ENOTFOUND' || kind === 'EAI_AGAIN' || kind === 'AddrNotAvailable')
    return new FabricError(
      'usage',
      `Cannot listen on ${host}: it is not an address of this machine. Use --host 127.0.0.1 (or 0.0.0.0 with a token).`,
      { cause: error },
    );
  return error;
}

/**
 * The Postgres queue (issue 17): N runs sent at once over HTTP to `fabric serve`, run in-process
 * (no queue) and by 1, 2 and 4 `fabric worker` processes; wall time and runs/s. Then the event
 * lag from a worker's write to the SSE client (each event's `ts` against its arrival), on a quiet
 * queue and under the load of the throughput runs. Every process runs the build (bin/fabric.mjs)
 * and mirrors to the same Postgres. The model is the keyed fake, with a fixed time per answer.
 * Skipped, with a note, when Postgres is unreachable.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { plural } from '../src/domain/words.ts';
import { ROOT } from '../test/support/fabric-cli.ts';
import { benchEnv, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { startKeyedLlmServer } from './support/keyed-llm-server.ts';
import { createThrowawayDb } from './support/postgres-db.ts';
import { startServe } from './support/serve-process.ts';
import { QUICK, fmt, median, percentile, printTable } from './support/stats.ts';
import { TASK } from './support/units-script.ts';

const RUNS = Number(process.env.BENCH_QUEUE_RUNS ?? (QUICK ? 16 : 60));
const STEPS = 5;
const MODEL_MS = 50;
const WORKER_CONCURRENCY = 8;
/** `control.pool_size` of every process (BENCH_QUEUE_POOL_SIZE; default the config's, 3). */
const POOL_SIZE = Number(process.env.BENCH_QUEUE_POOL_SIZE ?? 3);

/** Follows a run's events to run_end; returns the lag of each event (arrival − its ts), in ms. */
async function follow(url: string, runId: string): Promise<number[]> {
  const response = await fetch(`${url}/v1/runs/${runId}/events`);
  if (!response.ok || response.body === null)
    throw new Error(`bench: events of ${runId}: ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const lags: number[] = [];
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`bench: the events of ${runId} ended without run_end`);
    buffer += value;
    for (let cut = buffer.indexOf('\n\n'); cut !== -1; cut = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (data === undefined) continue;
      const event = JSON.parse(data) as { kind: string; ts: string; status?: string };
      lags.push(Date.now() - Date.parse(event.ts));
      if (event.kind === 'run_end') {
        await reader.cancel();
        if (event.status !== 'succeeded') throw new Error(`bench: run ${runId} ended ${event.status}`);
        return lags;
      }
    }
  }
}

async function start(url: string): Promise<string> {
  const response = await fetch(`${url}/v1/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ specialist: 'units', task: TASK, max_steps: STEPS + 5 }),
  });
  const body = (await response.json()) as { run_id?: string };
  if (response.status !== 202 || body.run_id === undefined)
    throw new Error(`bench: POST /v1/runs answered ${response.status}: ${JSON.stringify(body)}`);
  return body.run_id;
}

/** N runs at once; wall time, and every event's lag. */
async function batch(url: string, n: number): Promise<{ wallMs: number; lags: number[] }> {
  const started = performance.now();
  const lags = await Promise.all(Array.from({ length: n }, async () => follow(url, await start(url))));
  return { wallMs: performance.now() - started, lags: lags.flat() };
}

function spawnWorker(configPath: string, env: Record<string, string>, cwd: string): ChildProcess {
  return spawn(
    process.execPath,
    [
      join(ROOT, 'bin/fabric.mjs'),
      'worker',
      '--concurrency',
      String(WORKER_CONCURRENCY),
      '--config',
      configPath,
    ],
    {
      cwd,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      stdio: ['ignore', 'ignore', 'ignore'],
    },
  );
}

async function untilWorkers(url: string, n: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const body = (await (await fetch(`${url}/v1/workers`)).json()) as { workers: { state: string }[] };
    if (body.workers.filter((w) => w.state === 'running').length >= n) return;
    if (Date.now() > deadline) throw new Error(`bench: ${n} workers did not report in 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-queue-'));
const llm = await startKeyedLlmServer(STEPS, { delayMs: MODEL_MS });
const rows: string[][] = [];
const quietLags: number[] = [];
/** Connections to the database after each case's batch, by worker count. */
const connections = new Map<number, Record<string, number>>();
let inProcessMs: number | undefined;
try {
  const probe = await createThrowawayDb();
  if (probe === null) {
    console.log('  skipped: the queue part needs Postgres (FABRIC_BENCH_PG)');
  } else {
    await probe.drop();
    console.log(
      `  ${RUNS} runs of ${STEPS} steps sent at once; the model answers in ${MODEL_MS} ms; workers run ${WORKER_CONCURRENCY} runs each`,
    );
    for (const workers of [0, 1, 2, 4]) {
      const db = await createThrowawayDb();
      if (db === null) throw new Error('bench: Postgres went away');
      const caseDir = join(dir, `w${workers}`);
      await mkdir(caseDir, { recursive: true });
      const configPath = await writeConfig(
        caseDir,
        unitsConfig({
          control: { enabled: true, pool_size: POOL_SIZE },
          ...(workers === 0 ? {} : { queue: 'postgres' }),
          worker: { heartbeat_s: 1, dead_after_s: 30 },
        }),
      );
      const env = { ...benchEnv(llm.url, join(caseDir, 'server')), FABRIC_DSN: db.dsn };
      const serve = await startServe(configPath, env, caseDir);
      const procs = Array.from({ length: workers }, (_, n) =>
        spawnWorker(configPath, { ...env, FABRIC_RUNS_DIR: join(caseDir, `worker-${n}`) }, caseDir),
      );
      try {
        if (workers > 0) await untilWorkers(serve.url, workers);
        await batch(serve.url, Math.min(RUNS, 8)); // warm-up: packs loaded, pools connected
        if (workers === 1) {
          // Quiet: one run at a time, so the lag is the queue's own.
          for (let n = 0; n < (QUICK ? 3 : 10); n++) quietLags.push(...(await batch(serve.url, 1)).lags);
        }
        const { wallMs, lags } = await batch(serve.url, RUNS);
        connections.set(workers, await db.connections());
        if (workers === 0) inProcessMs = wallMs;
        rows.push([
          workers === 0 ? 'in-process (fabric serve, no queue)' : `queue, ${plural(workers, 'worker')}`,
          fmt(wallMs),
          (RUNS / (wallMs / 1000)).toFixed(1),
          inProcessMs === undefined ? '—' : `${(inProcessMs / wallMs).toFixed(2)}x`,
          workers === 0 ? '—' : `${fmt(median(lags))} / ${fmt(percentile(lags, 0.99))}`,
        ]);
      } finally {
        for (const proc of procs) proc.kill('SIGTERM');
        await Promise.all(procs.map((proc) => new Promise((resolve) => proc.once('exit', resolve))));
        await serve.stop();
        await db.drop();
      }
    }
    printTable(
      `Throughput: ${RUNS} runs at once`,
      ['case', 'wall ms', 'runs/s', 'vs in-process', 'event lag ms p50 / p99'],
      rows,
    );
    const total = (workers: number) =>
      Object.values(connections.get(workers) ?? {}).reduce((sum, n) => sum + n, 0);
    printTable(
      `Postgres connections after the batch (control.pool_size ${POOL_SIZE}); per worker: the growth from 1 worker`,
      ['case', 'connections', 'by application_name', 'per added worker'],
      [...connections.keys()].map((workers) => [
        workers === 0 ? 'in-process server' : `server + ${plural(workers, 'worker')}`,
        String(total(workers)),
        Object.entries(connections.get(workers) ?? {})
          .map(([app, n]) => `${app} ${n}`)
          .join(', '),
        workers > 1 ? ((total(workers) - total(1)) / (workers - 1)).toFixed(1) : '—',
      ]),
    );
    printTable(
      'Event lag, worker write → SSE client, one run at a time',
      ['events', 'median ms', 'p99 ms', 'max ms'],
      [
        [
          String(quietLags.length),
          fmt(median(quietLags)),
          fmt(percentile(quietLags, 0.99)),
          fmt(Math.max(...quietLags)),
        ],
      ],
    );
  }
} finally {
  await llm.stop();
  await rm(dir, { recursive: true, force: true });
}

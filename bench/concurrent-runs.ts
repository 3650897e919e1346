/**
 * 100 concurrent HTTP runs (SPEC §10, §15): `fabric serve` in its own process, 100
 * `POST /v1/runs` of 5-step runs at once, each followed on its event stream to `run_end`, three
 * batches on one server (memory should stay flat as runs accumulate); with the embedded control
 * plane and with Postgres. The baseline is bare fetch loops doing the same 100 × 5 requests in a
 * process of their own, with the same cap on requests in flight. The cases' batches take turns.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../src/config/load.ts';
import { ROOT } from '../test/support/fabric-cli.ts';
import { controlRows } from './support/control-rows.ts';
import { benchEnv, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { httpRun } from './support/http-runs.ts';
import { startKeyedLlmServer } from './support/keyed-llm-server.ts';
import { createThrowawayDb } from './support/postgres-db.ts';
import { peakRssMiB, startServe, waitQuiet } from './support/serve-process.ts';
import { QUICK, fmt, median, percentile, printTable, ratio, rounds, since } from './support/stats.ts';
import { TASK, shapeOf } from './support/units-script.ts';

const RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? (QUICK ? 20 : 100));
const STEPS = 5;
const BATCHES = rounds(3, 1);

/** One batch of RUNS runs started at once. */
interface Batch {
  readonly wallMs: number;
  readonly p50: number;
  readonly p99: number;
}

interface CaseResult {
  readonly name: string;
  readonly batches: Batch[];
  /** Peak RSS after each batch. */
  readonly peaks: number[];
  /** Of every batch's runs: rows in the control plane, and rows whose run_end was mirrored. */
  control: string;
}

function batchOf(wallMs: number, latencies: readonly number[]): Batch {
  return { wallMs, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) };
}

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-concurrent-'));
const llm = await startKeyedLlmServer(STEPS);

/** Fails unless the model server answered exactly `expected` chat requests since `before`. */
function checkRequests(name: string, before: number, expected: number): void {
  const made = llm.chatRequests() - before;
  if (made !== expected) throw new Error(`bench: ${name} made ${made} chat requests, expected ${expected}`);
}

/** A case: one batch at a time; `finish` ends it and says what its control plane holds. */
interface Contender {
  readonly name: string;
  batch(): Promise<{ batch: Batch; peakMiB: number }>;
  finish(): Promise<string>;
}

/** Runs a batch of RUNS runs; fails unless the model server answered exactly RUNS × STEPS requests. */
async function checkedBatch<T>(name: string, work: () => Promise<T>): Promise<T> {
  const before = llm.chatRequests();
  const result = await work();
  checkRequests(name, before, RUNS * STEPS);
  return result;
}

/** `fabric serve` with `control`, started and warmed up. */
async function serveContender(name: string, control: Record<string, unknown>): Promise<Contender> {
  const caseDir = await mkdtemp(join(dir, 'case-'));
  const env = benchEnv(llm.url, join(caseDir, 'runs'));
  const configPath = await writeConfig(caseDir, unitsConfig({ control }));
  const config = await loadConfig({ configPath, cwd: caseDir, env });
  const serve = await startServe(configPath, env, caseDir);
  servers.push(serve);
  const ids = new Set<string>();
  const failed = (error: unknown) => new Error(`${String(error)}\nfabric serve's stderr:\n${serve.stderr()}`);
  await httpRun(serve.url, TASK, STEPS).catch((error: unknown) => {
    throw failed(error);
  }); // warm-up: the pack module, the model catalog
  return {
    name,
    batch: () =>
      checkedBatch(name, async () => {
        await waitQuiet(serve.pid);
        const started = performance.now();
        const outcomes = await Promise.all(
          Array.from({ length: RUNS }, () => httpRun(serve.url, TASK, STEPS)),
        ).catch((error: unknown) => {
          throw failed(error);
        });
        const wallMs = since(started);
        for (const outcome of outcomes) ids.add(outcome.runId);
        const batch = batchOf(
          wallMs,
          outcomes.map((o) => o.latencyMs),
        );
        return { batch, peakMiB: await peakRssMiB(serve.pid) };
      }),
    finish: async () => {
      const code = await serve.stop();
      if (code !== 0) throw new Error(`bench: fabric serve exited ${code} on SIGTERM:\n${serve.stderr()}`);
      return controlRows(config, ids);
    },
  };
}

/** The bare loops, each batch in a new process (so its peak memory is one batch's). */
async function baselineContender(cap: number): Promise<Contender> {
  const shapeFile = join(dir, 'shape.json');
  await writeFile(shapeFile, JSON.stringify(shapeOf(llm.firstChatBody())));
  const name = `bare fetch loops, cap ${cap} (baseline)`;
  return {
    name,
    batch: () =>
      checkedBatch(name, async () => {
        const { stdout } = await promisify(execFile)(
          process.execPath,
          [
            '--import',
            'tsx',
            join(ROOT, 'bench/concurrent-baseline.ts'),
            shapeFile,
            llm.url,
            String(RUNS),
            String(STEPS),
            String(cap),
          ],
          { cwd: ROOT },
        );
        const result = JSON.parse(stdout) as { wallMs: number; latencies: number[]; peakMiB: number };
        return { batch: batchOf(result.wallMs, result.latencies), peakMiB: result.peakMiB };
      }),
    finish: async () => '-',
  };
}

const servers: Awaited<ReturnType<typeof startServe>>[] = [];
const db = await createThrowawayDb();
try {
  const defaults = await loadConfig({
    configPath: await writeConfig(dir, unitsConfig({})),
    cwd: dir,
    env: {},
  });
  const cap = defaults.llm.max_concurrent_requests;
  // Both servers stay up; their batches and the baseline's take turns, so a busy moment on the
  // machine does not fall on one case only. Before each batch its server must be idle.
  const contenders = [await serveContender('fabric serve, embedded PGlite', {})];
  if (db) contenders.push(await serveContender('fabric serve, Postgres', { dsn: db.dsn }));
  contenders.unshift(await baselineContender(cap));
  const results: CaseResult[] = contenders.map((c) => ({
    name: c.name,
    batches: [],
    peaks: [],
    control: '-',
  }));
  for (let batch = 0; batch < BATCHES; batch += 1) {
    for (const [i, contender] of contenders.entries()) {
      const { batch: measured, peakMiB } = await contender.batch();
      results[i]!.batches.push(measured);
      results[i]!.peaks.push(peakMiB);
    }
  }
  for (const [i, contender] of contenders.entries()) results[i]!.control = await contender.finish();

  const base = results[0]!;
  const mid = (r: CaseResult, key: keyof Batch) => median(r.batches.map((b) => b[key]));
  const peak = (r: CaseResult) => Math.max(...r.peaks);
  printTable(
    `${RUNS} concurrent HTTP runs of ${STEPS} steps, requests in flight capped at ${cap}; median of ${BATCHES} ` +
      `batches (one server per case); latency: start to end of a run; peak RSS after the first and the last batch`,
    ['case', 'wall ms', 'x', 'p50 ms', 'x', 'p99 ms', 'x', 'peak RSS MiB', 'x', 'in control plane'],
    results.map((r) => [
      r.name,
      fmt(mid(r, 'wallMs')),
      ratio(mid(r, 'wallMs'), mid(base, 'wallMs')),
      fmt(mid(r, 'p50')),
      ratio(mid(r, 'p50'), mid(base, 'p50')),
      fmt(mid(r, 'p99')),
      ratio(mid(r, 'p99'), mid(base, 'p99')),
      r.peaks.length > 1 ? `${fmt(r.peaks[0]!)} → ${fmt(r.peaks.at(-1)!)}` : fmt(r.peaks[0]!),
      ratio(peak(r), peak(base)),
      r.control,
    ]),
  );
} finally {
  for (const server of servers) await server.stop();
  await db?.drop();
  await llm.stop();
  await rm(dir, { recursive: true, force: true });
}

/**
 * 100 concurrent HTTP runs (SPEC §10, §15): `fabric serve` in its own process, 100
 * `POST /v1/runs` of 5-step runs at once, each followed on its event stream to `run_end`, three
 * batches on one server (memory should stay flat as runs accumulate); with the embedded control
 * plane and with Postgres. The baseline is bare fetch loops doing the same 100 × 5 requests in a
 * process of their own, with the same cap on requests in flight.
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
import { peakRssMiB, startServe } from './support/serve-process.ts';
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
  readonly batches: readonly Batch[];
  /** Peak RSS after the first batch and after the last. */
  readonly peakFirstMiB: number;
  readonly peakMiB: number;
  /** Of every batch's runs: rows in the control plane, and rows whose run_end was mirrored. */
  readonly control: string;
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

async function serveCase(name: string, control: Record<string, unknown>): Promise<CaseResult> {
  const caseDir = await mkdtemp(join(dir, 'case-'));
  const env = benchEnv(llm.url, join(caseDir, 'runs'));
  const configPath = await writeConfig(caseDir, unitsConfig({ control }));
  const config = await loadConfig({ configPath, cwd: caseDir, env });
  const serve = await startServe(configPath, env, caseDir);
  const before = llm.chatRequests();
  const batches: Batch[] = [];
  const ids = new Set<string>();
  const peaks: number[] = [];
  try {
    await httpRun(serve.url, TASK, STEPS); // warm-up: the pack module, the model catalog
    for (let batch = 0; batch < BATCHES; batch += 1) {
      const started = performance.now();
      const outcomes = await Promise.all(Array.from({ length: RUNS }, () => httpRun(serve.url, TASK, STEPS)));
      batches.push(
        batchOf(
          since(started),
          outcomes.map((o) => o.latencyMs),
        ),
      );
      for (const outcome of outcomes) ids.add(outcome.runId);
      peaks.push(await peakRssMiB(serve.pid));
    }
  } catch (error) {
    await serve.stop();
    throw new Error(`${String(error)}\nfabric serve's stderr:\n${serve.stderr()}`);
  }
  const code = await serve.stop();
  if (code !== 0) throw new Error(`bench: fabric serve exited ${code} on SIGTERM:\n${serve.stderr()}`);
  checkRequests(name, before, (RUNS * BATCHES + 1) * STEPS);
  return {
    name,
    batches,
    peakFirstMiB: peaks[0]!,
    peakMiB: peaks.at(-1)!,
    control: await controlRows(config, ids),
  };
}

/** The baseline, BATCHES times, each in a new process (so its peak memory is one batch's). */
async function baselineCase(cap: number): Promise<CaseResult> {
  const shapeFile = join(dir, 'shape.json');
  await writeFile(shapeFile, JSON.stringify(shapeOf(llm.firstChatBody())));
  const batches: Batch[] = [];
  const peaks: number[] = [];
  for (let batch = 0; batch < BATCHES; batch += 1) {
    const before = llm.chatRequests();
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
    checkRequests('the bare loops', before, RUNS * STEPS);
    const result = JSON.parse(stdout) as { wallMs: number; latencies: number[]; peakMiB: number };
    batches.push(batchOf(result.wallMs, result.latencies));
    peaks.push(result.peakMiB);
  }
  return {
    name: `bare fetch loops, cap ${cap} (baseline)`,
    batches,
    peakFirstMiB: peaks[0]!,
    peakMiB: Math.max(...peaks),
    control: '-',
  };
}

try {
  const results: CaseResult[] = [];
  const defaults = await loadConfig({
    configPath: await writeConfig(dir, unitsConfig({})),
    cwd: dir,
    env: {},
  });
  const cap = defaults.llm.max_concurrent_requests;
  results.push(await serveCase('fabric serve, embedded PGlite', {}));
  const db = await createThrowawayDb();
  if (db) {
    try {
      results.push(await serveCase('fabric serve, Postgres', { dsn: db.dsn }));
    } finally {
      await db.drop();
    }
  }
  results.unshift(await baselineCase(cap));
  const base = results[0]!;
  const mid = (r: CaseResult, key: keyof Batch) => median(r.batches.map((b) => b[key]));
  printTable(
    `${RUNS} concurrent HTTP runs of ${STEPS} steps, requests in flight capped at ${cap}; median of ${BATCHES} ` +
      `batches (one server); latency: start to end of a run; peak RSS after the first and the last batch`,
    ['case', 'wall ms', 'x', 'p50 ms', 'x', 'p99 ms', 'x', 'peak RSS MiB', 'x', 'in control plane'],
    results.map((r) => [
      r.name,
      fmt(mid(r, 'wallMs')),
      ratio(mid(r, 'wallMs'), mid(base, 'wallMs')),
      fmt(mid(r, 'p50')),
      ratio(mid(r, 'p50'), mid(base, 'p50')),
      fmt(mid(r, 'p99')),
      ratio(mid(r, 'p99'), mid(base, 'p99')),
      BATCHES > 1 ? `${fmt(r.peakFirstMiB)} → ${fmt(r.peakMiB)}` : fmt(r.peakMiB),
      ratio(r.peakMiB, base.peakMiB),
      r.control,
    ]),
  );
} finally {
  await llm.stop();
  await rm(dir, { recursive: true, force: true });
}

/**
 * 100 concurrent HTTP runs (SPEC §10, §15): `fabric serve` in its own process, 100
 * `POST /v1/runs` of 5-step runs at once, each followed on its event stream to `run_end`; with
 * the embedded control plane and with Postgres. The baseline is bare fetch loops doing the same
 * 100 × 5 requests in their own process, with the same cap on requests in flight.
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
import { QUICK, fmt, percentile, printTable, ratio, since } from './support/stats.ts';
import { TASK, shapeOf } from './support/units-script.ts';

const RUNS = Number(process.env.BENCH_CONCURRENT_RUNS ?? (QUICK ? 20 : 100));
const STEPS = 5;

interface CaseResult {
  readonly name: string;
  readonly wallMs: number;
  readonly latencies: readonly number[];
  readonly peakMiB: number;
  /** Of the RUNS runs: rows in the control plane, and rows whose run_end was mirrored. */
  readonly control: string;
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
  let wallMs: number;
  let outcomes: Awaited<ReturnType<typeof httpRun>>[];
  let peakMiB: number;
  try {
    await httpRun(serve.url, TASK, STEPS); // warm-up: the pack module, the model catalog
    const started = performance.now();
    outcomes = await Promise.all(Array.from({ length: RUNS }, () => httpRun(serve.url, TASK, STEPS)));
    wallMs = since(started);
    peakMiB = await peakRssMiB(serve.pid);
  } catch (error) {
    throw new Error(`${String(error)}\nfabric serve's stderr:\n${serve.stderr()}`);
  } finally {
    const code = await serve.stop();
    if (code !== 0) console.error(`bench: fabric serve exited ${code}:\n${serve.stderr()}`);
  }
  checkRequests(name, before, (RUNS + 1) * STEPS);
  return {
    name,
    wallMs,
    latencies: outcomes.map((o) => o.latencyMs),
    peakMiB,
    control: await controlRows(config, new Set(outcomes.map((o) => o.runId))),
  };
}

async function baselineCase(cap: number): Promise<CaseResult> {
  const shapeFile = join(dir, 'shape.json');
  await writeFile(shapeFile, JSON.stringify(shapeOf(llm.firstChatBody())));
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
  checkRequests('the bare loop', before, RUNS * STEPS);
  const result = JSON.parse(stdout) as { wallMs: number; latencies: number[]; peakMiB: number };
  return { name: `bare fetch loops, cap ${cap} (baseline)`, ...result, control: '-' };
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
  const p = (r: CaseResult, q: number) => percentile(r.latencies, q);
  printTable(
    `${RUNS} concurrent HTTP runs of ${STEPS} steps (requests in flight capped at ${cap}); latency is start to end of a run`,
    ['case', 'wall ms', 'x', 'p50 ms', 'x', 'p99 ms', 'x', 'peak RSS MiB', 'x', 'in control plane'],
    results.map((r) => [
      r.name,
      fmt(r.wallMs),
      ratio(r.wallMs, base.wallMs),
      fmt(p(r, 0.5)),
      ratio(p(r, 0.5), p(base, 0.5)),
      fmt(p(r, 0.99)),
      ratio(p(r, 0.99), p(base, 0.99)),
      fmt(r.peakMiB),
      ratio(r.peakMiB, base.peakMiB),
      r.control,
    ]),
  );
} finally {
  await llm.stop();
  await rm(dir, { recursive: true, force: true });
}

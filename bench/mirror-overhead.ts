/**
 * The control plane on against off (SPEC §7, §15): what mirroring to the embedded database and
 * to Postgres adds to a 50-step run, measured two ways, as ratios against the control plane off:
 * - per run in a long-lived process (serve, mcp, a daemon): one fabric per case, runs one after
 *   another, then the time `close()` takes to flush the mirror and release the store;
 * - for the whole command (`fabric run`, in-process): config, model choice, run, mirror flush.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FabricConfig } from '../src/config/load.ts';
import type { RunResult } from '../src/domain/run-result.ts';
import { runCli } from '../src/interfaces/cli/cli.ts';
import { startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import {
  type BenchFabric,
  benchEnv,
  openFabric,
  unitsConfig,
  writeConfig,
} from './support/fabric-adapter.ts';
import { controlRows } from './support/control-rows.ts';
import { createThrowawayDb } from './support/postgres-db.ts';
import { fmt, median, printTable, ratio, rounds, since } from './support/stats.ts';
// Node's own `performance` (perf_hooks) has eventLoopUtilization; the DOM type does not.
const performance = (await import('node:perf_hooks')).performance;
import { BENCH_MODEL, TASK, unitsScript } from './support/units-script.ts';

const STEPS = 50;
/** Blocks of the per-run series; ROUNDS runs in all, spread over them. */
const BLOCKS = 3;
const ROUNDS = BLOCKS * Math.ceil(rounds(9, 3) / BLOCKS);
/** Untimed runs after the store is ready, before each block's timed ones. */
const WARM_RUNS = Number(process.env.BENCH_QUICK ? 1 : 4);

interface Case {
  readonly name: string;
  readonly control: Record<string, unknown>;
  /** One config and runs directory per case, kept across rounds as a user's runs/ is. */
  dir: string;
  configPath: string;
  env: Record<string, string>;
  readonly perRun: number[];
  /** Per timed run: the main thread's busy time (event-loop utilisation), what the loop itself pays. */
  readonly busy: number[];
  /** Per block: the time close() takes to flush the mirror and release the store. */
  readonly closeMs: number[];
  /** What the control plane holds of the runs of the per-run series, after close(). */
  mirrored: string;
  readonly command: number[];
}

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-mirror-'));
const server = await startFakeLlmServer({ flavor: 'lm_studio', models: [BENCH_MODEL] });
const db = await createThrowawayDb();

function script(): void {
  server.requests.length = 0; // recorded requests would pile up across runs
  server.push(...unitsScript(STEPS));
}

function check(name: string, result: Pick<RunResult, 'status' | 'steps'>): void {
  const chats = server.chatRequests().length;
  if (result.status !== 'succeeded' || result.steps !== STEPS || chats !== STEPS)
    throw new Error(`bench: ${name}: run ${result.status} after ${result.steps} steps, ${chats} requests`);
}

/** One run through `fabric`; its time goes to `samples`; returns its run id. */
async function timeRun(
  c: Case,
  fabric: BenchFabric,
  samples: number[] = [],
  busy: number[] = [],
): Promise<string> {
  script();
  const loop = performance.eventLoopUtilization();
  const start = performance.now();
  const result = await fabric.run(TASK);
  samples.push(since(start));
  busy.push(performance.eventLoopUtilization(loop).active);
  check(c.name, result);
  return result.run_id;
}

/**
 * Waits (10 s at most) until this process's threads have gone quiet: V8 compiles the embedded
 * database's WASM in the background for a few seconds after it starts, which a long-lived server
 * pays once and a per-run figure must not count.
 */
async function processQuiet(): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const before = process.cpuUsage();
    await new Promise((resolve) => setTimeout(resolve, 250));
    const used = process.cpuUsage(before);
    if ((used.user + used.system) / 1000 < 250 * 0.1) return;
  }
}

async function timeCommand(c: Case): Promise<number> {
  script();
  let stdout = '';
  let stderr = '';
  const start = performance.now();
  const code = await runCli(['run', '-s', 'units', '--json', '--config', c.configPath, TASK], {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: c.env,
    cwd: c.dir,
    signal: new AbortController().signal,
  });
  const ms = since(start);
  if (code !== 0) throw new Error(`bench: ${c.name}: fabric run exited ${code}: ${stdout}${stderr}`);
  check(c.name, JSON.parse(stdout) as RunResult);
  return ms;
}

try {
  const cases: Case[] = [];
  const controls: [string, Record<string, unknown>][] = [
    ['control off (baseline)', { enabled: false }],
    ['embedded PGlite', { enabled: true }],
  ];
  if (db) controls.push(['Postgres server', { enabled: true, dsn: db.dsn }]);
  for (const [name, control] of controls) {
    const caseDir = await mkdtemp(join(dir, 'case-'));
    const env = benchEnv(server.url, join(caseDir, 'runs'));
    const configPath = await writeConfig(caseDir, unitsConfig({ control, loop: { max_steps: STEPS + 5 } }));
    cases.push({
      name,
      control,
      dir: caseDir,
      configPath,
      env,
      perRun: [],
      busy: [],
      closeMs: [],
      mirrored: '-',
      command: [],
    });
  }

  // Per run, in a long-lived process. Each block runs one case alone, from createFabric to
  // close(), so that a mirror still writing in the background slows only its own case's runs;
  // the blocks take turns, so drift on the machine touches every case alike.
  const ids = cases.map(() => new Set<string>());
  const configs: FabricConfig[] = [];
  for (let block = 0; block < BLOCKS; block += 1) {
    for (const [i, c] of cases.entries()) {
      const fabric = await openFabric(c.configPath, c.env, c.dir);
      ids[i]!.add(await timeRun(c, fabric)); // warm-up: the pack module, the catalog, the control store
      // A long-lived process boots its store once, before its runs (fabric serve opens it at start),
      // and runs long enough for the engine to have compiled the embedded database's WASM.
      await fabric.ready();
      for (let warm = 0; warm < WARM_RUNS; warm += 1) ids[i]!.add(await timeRun(c, fabric));
      await processQuiet();
      for (let round = 0; round < ROUNDS / BLOCKS; round += 1)
        ids[i]!.add(await timeRun(c, fabric, c.perRun, c.busy));
      const start = performance.now();
      await fabric.close();
      c.closeMs.push(since(start));
      configs[i] = fabric.config;
    }
  }
  for (const [i, c] of cases.entries()) c.mirrored = await controlRows(configs[i]!, ids[i]!);

  // The whole command. The warm-up's embedded database exists already, as on a user's second run.
  for (const c of cases) await timeCommand(c);
  for (let round = 0; round < ROUNDS; round += 1) for (const c of cases) c.command.push(await timeCommand(c));

  const base = cases[0]!;
  printTable(
    `Control plane on vs off: a ${STEPS}-step run, median of ${ROUNDS} (per run: ${BLOCKS} blocks, each a ` +
      `fresh fabric: a warm-up run, the store made ready, ${WARM_RUNS} more untimed runs, then ` +
      `${ROUNDS / BLOCKS} timed ones; close() then flushes the mirror). Main thread: its busy time ` +
      'during the run (event-loop utilisation), what the loop itself pays; wall time also shows the ' +
      "database's own CPU (a worker thread, or the Postgres server) competing on this machine's cores",
    [
      'control plane',
      'per run ms',
      'x',
      'main thread ms',
      'x',
      'close ms',
      'mirrored',
      'fabric run (command) ms',
      'x',
    ],
    cases.map((c) => [
      c.name,
      fmt(median(c.perRun)),
      ratio(median(c.perRun), median(base.perRun)),
      fmt(median(c.busy)),
      ratio(median(c.busy), median(base.busy)),
      fmt(median(c.closeMs)),
      c.mirrored,
      fmt(median(c.command)),
      ratio(median(c.command), median(base.command)),
    ]),
  );
} finally {
  await server.stop();
  await db?.drop();
  await rm(dir, { recursive: true, force: true });
}

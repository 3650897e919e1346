/**
 * What mirroring to the control plane adds to a 50-step run (issue 6), as ratios against the
 * same run with the control plane off, measured in this process. Run by `npm run bench`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { stringify } from 'yaml';
import { runCli } from '../src/interfaces/cli/cli.ts';
import { EXAMPLE_PACK } from '../test/support/fabric-cli.ts';
import { type ScriptedTurn, startFakeLlmServer } from '../test/support/fake-llm-server.ts';

const STEPS = 50;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PG = process.env.FABRIC_BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';

function script(): ScriptedTurn[] {
  const step: ScriptedTurn = {
    reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'km', to: 'm' } }] },
  };
  return [
    ...Array.from({ length: STEPS - 1 }, () => step),
    { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done', answer: '1000 m' } }] } },
  ];
}

// One runs directory for every round, as a user's runs/ persists: the embedded database is
// created once and then opened, not created, by each run.
const RUNS_DIR = await mkdtemp(join(tmpdir(), 'fabric-bench-runs-'));

async function timeRun(control: Record<string, unknown>): Promise<{ totalMs: number; runMs: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-'));
  const server = await startFakeLlmServer({
    flavor: 'lm_studio',
    models: [{ id: 'bench-model', toolUse: true }],
    script: script(),
  });
  try {
    const configPath = join(dir, 'fabric.yaml');
    await writeFile(
      configPath,
      stringify({
        control,
        loop: { max_steps: STEPS + 5 },
        specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack` } },
      }),
    );
    let stdout = '';
    const started = performance.now();
    const code = await runCli(['run', '-s', 'units', '--json', '--config', configPath, 'bench'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
      env: { LM_STUDIO_URL: server.url, OLLAMA_HOST: '127.0.0.1:9', FABRIC_RUNS_DIR: RUNS_DIR },
      cwd: dir,
      signal: new AbortController().signal,
    });
    const totalMs = performance.now() - started;
    if (code !== 0) throw new Error(`run exited ${code}: ${stdout}`);
    const result = JSON.parse(stdout) as { steps: number; runlog: string };
    if (result.steps !== STEPS) throw new Error(`expected ${STEPS} steps, got ${result.steps}`);
    const { readFile } = await import('node:fs/promises');
    const end = (await readFile(result.runlog, 'utf8')).trim().split('\n').at(-1) ?? '{}';
    return { totalMs, runMs: (JSON.parse(end) as { duration_ms: number }).duration_ms };
  } finally {
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function main(): Promise<void> {
  const dbName = `fabric_bench_${Date.now()}`;
  const admin = postgres(`${PG}/test`, { max: 1, onnotice: () => {} });
  let pgDsn: string | undefined;
  try {
    await admin.unsafe(`create database ${dbName}`);
    pgDsn = `${PG}/${dbName}`;
  } catch {
    console.log('  (Postgres not reachable: skipping the server case)');
  }
  const cases: [string, Record<string, unknown>][] = [
    ['control off (baseline)', { enabled: false }],
    ['embedded PGlite', { enabled: true }],
    ...(pgDsn
      ? ([['Postgres server', { enabled: true, dsn: pgDsn }]] as [string, Record<string, unknown>][])
      : []),
  ];
  await timeRun({ enabled: false }); // warm-up: module loading and the JIT
  await timeRun({ enabled: true }); // creates the embedded database once, as a first run would
  const rows: { name: string; run: number; total: number }[] = [];
  for (const [name, control] of cases) {
    const samples = [];
    for (let i = 0; i < ROUNDS; i += 1) samples.push(await timeRun(control));
    rows.push({
      name,
      run: median(samples.map((s) => s.runMs)),
      total: median(samples.map((s) => s.totalMs)),
    });
  }
  const base = rows[0]!;
  console.log(
    `A ${STEPS}-step run, median of ${ROUNDS}: the run's own wall time (run_start to run_end), and the`,
  );
  console.log('whole command (model choice, run, and the mirror flush at the end):');
  for (const row of rows) {
    console.log(
      `  ${row.name.padEnd(24)} run ${row.run.toFixed(0).padStart(5)} ms ${(row.run / base.run).toFixed(2)}x   ` +
        `command ${row.total.toFixed(0).padStart(5)} ms ${(row.total / base.total).toFixed(2)}x`,
    );
  }
  if (pgDsn) await admin.unsafe(`drop database ${dbName} with (force)`);
  await admin.end();
  await rm(RUNS_DIR, { recursive: true, force: true });
}

await main();

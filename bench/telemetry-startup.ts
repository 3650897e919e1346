/**
 * Telemetry's start-up cost (SPEC §21, issue 37): each row a new `fabric` process of the build
 * (bin/fabric.mjs), telemetry off against on (`OTEL_EXPORTER_OTLP_ENDPOINT` naming a receiver in
 * this process that takes the spans). `fabric specialists` exports nothing, so on it must load no
 * OpenTelemetry module; a 3-step `fabric run` exports its trace at the end, so on it loads the
 * exporter and sends. The ratio is against the same command with telemetry off, in this run.
 */
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { startFakeLlmServer } from '../test/support/fake-llm-server.ts';
import { benchEnv, unitsConfig, writeConfig } from './support/fabric-adapter.ts';
import { fmt, median, printTable, ratio, rounds, since } from './support/stats.ts';
import { BENCH_MODEL, TASK, unitsScript } from './support/units-script.ts';

const ROUNDS = rounds(10, 2);
const STEPS = 3;
const cli = fileURLToPath(new URL('../bin/fabric.mjs', import.meta.url));

/** An OTLP/HTTP receiver that takes every export and counts them. */
let exports = 0;
const receiver = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    exports += 1;
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;

const dir = await mkdtemp(join(tmpdir(), 'fabric-bench-telemetry-'));
const server = await startFakeLlmServer({ flavor: 'lm_studio', models: [BENCH_MODEL] });
try {
  const configPath = await writeConfig(dir, unitsConfig({ control: { enabled: false } }));
  const env = benchEnv(server.url, join(dir, 'runs'));
  const on = { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint };

  /** One process, timed; `run` gets its script first and must succeed. */
  const once = async (args: readonly string[], extra: Record<string, string>): Promise<number> => {
    if (args[0] === 'run') server.push(...unitsScript(STEPS));
    const start = performance.now();
    const result = await execa(process.execPath, [cli, ...args, '--config', configPath], {
      cwd: dir,
      env: { ...env, ...extra },
      reject: false,
    });
    const ms = since(start);
    if (result.exitCode !== 0)
      throw new Error(`bench: fabric ${args[0]} exited ${result.exitCode}: ${result.stderr}`);
    return ms;
  };

  const commands: [string, readonly string[]][] = [
    ['fabric specialists', ['specialists']],
    [`fabric run (${STEPS} steps, scripted)`, ['run', '--specialist', 'units', '--json', TASK]],
  ];
  const rows: string[][] = [];
  for (const [name, args] of commands) {
    const off: number[] = [];
    const onSamples: number[] = [];
    // A warm-up of each (disk cache), then off and on alternate so drift hits both alike.
    await once(args, {});
    await once(args, on);
    for (let round = 0; round < ROUNDS; round += 1) {
      off.push(await once(args, {}));
      onSamples.push(await once(args, on));
    }
    const base = median(off);
    rows.push([`${name}, telemetry off (baseline)`, fmt(base), ratio(base, base)]);
    rows.push([`${name}, telemetry on`, fmt(median(onSamples)), ratio(median(onSamples), base)]);
  }
  // The run's exports prove telemetry was on; `fabric specialists` must have sent nothing.
  const runsOn = ROUNDS + 1;
  if (exports !== runsOn)
    throw new Error(
      `bench: the receiver took ${exports} exports, expected one per run with telemetry on (${runsOn})`,
    );
  printTable(
    `Start-up with telemetry off and on, median of ${ROUNDS} processes each (node ${process.version})`,
    ['command', 'ms', 'x off'],
    rows,
  );
} finally {
  await server.stop();
  receiver.close();
  await rm(dir, { recursive: true, force: true });
}

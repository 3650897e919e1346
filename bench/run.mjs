// `npm run bench [-- PART...]`: speed figures as ratios against baselines measured in the same
// run (SPEC §15). Never asserted in tests (DEVELOPERS.md): it prints. It exits non-zero only
// when a part fails, since a bench that measures errors is worse than none.
//
//   npm run bench                     every part
//   npm run bench -- loop runlog      some parts
//   BENCH_QUICK=1 npm run bench       few rounds: to check that it works, not to measure
//   BENCH_ROUNDS=N                    N rounds wherever a part takes a median
import { spawnSync } from 'node:child_process';
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsx = (file) => ['--import', 'tsx', join(root, 'bench', file)];

/** Each part, in the order they run; the TypeScript ones through tsx. */
const PARTS = {
  startup: { what: 'CLI start-up against node -e 0', args: [join(root, 'bench/startup.mjs')] },
  telemetry: {
    what: 'fabric specialists and a 3-step fabric run, telemetry off against on (OTLP to a local receiver)',
    args: tsx('telemetry-startup.ts'),
  },
  loop: { what: 'a 50-step run against a bare fetch loop and agent SDKs', args: tsx('loop-overhead.ts') },
  control: { what: 'control plane on (PGlite, Postgres) against off', args: tsx('mirror-overhead.ts') },
  concurrent: { what: '100 concurrent HTTP runs against bare loops', args: tsx('concurrent-runs.ts') },
  runlog: { what: 'runlog write throughput against appendFileSync', args: tsx('runlog-throughput.ts') },
  viewer: { what: "a 1,000-step run's viewer page against its runlog", args: tsx('viewer-render.ts') },
  cache: {
    what: 'prompt-cache share against the best possible: 20 steps on one and two servers, 40 steps with compaction, 4 runs on 1 and 4 slots',
    args: tsx('cache-share.ts'),
  },
  battery: {
    what: "a battery's model loads and simulated time against the best schedule: one server with JIT + Auto-Evict, two servers",
    args: tsx('battery-loads.ts'),
  },
  queue: {
    what: 'runs through the Postgres queue on 1, 2, 4 workers against in-process; event lag',
    args: tsx('queue-throughput.ts'),
  },
};

const asked = process.argv.slice(2);
if (asked.includes('--help') || asked.includes('-h')) {
  console.log('Usage: npm run bench [-- PART...]   (BENCH_QUICK=1 for a quick check)\n\nParts:');
  for (const [name, part] of Object.entries(PARTS)) console.log(`  ${name.padEnd(11)} ${part.what}`);
  process.exit(0);
}
const unknown = asked.filter((name) => !(name in PARTS));
if (unknown.length > 0) {
  console.error(`bench: no part ${unknown.join(', ')}; the parts: ${Object.keys(PARTS).join(', ')}`);
  process.exit(2);
}
const parts = asked.length > 0 ? asked : Object.keys(PARTS);

const quick = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== '0';
const gib = (totalmem() / 2 ** 30).toFixed(1);
console.log(
  `agent-fabric bench, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC: node ${process.version}, ` +
    `${availableParallelism()} CPUs (${cpus()[0]?.model.trim() ?? 'unknown'}), ${gib} GiB, ` +
    // Other work on the machine moves every figure: the load says how quiet it was.
    `load ${loadavg()[0]?.toFixed(2)}${quick ? ', BENCH_QUICK' : ''}`,
);

const failed = [];
for (const name of parts) {
  const started = Date.now();
  console.log(`\n## ${name}: ${PARTS[name].what}`);
  const result = spawnSync(process.execPath, PARTS[name].args, { cwd: root, stdio: 'inherit' });
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (result.status === 0) console.log(`\n(${name}: ${seconds} s)`);
  else {
    failed.push(name);
    console.error(
      `\nbench: ${name} FAILED (exit ${result.status ?? result.signal}) after ${seconds} s; its figures are not valid`,
    );
  }
}
if (failed.length > 0) {
  console.error(`\nbench: ${failed.length} part(s) failed: ${failed.join(', ')}`);
  process.exit(1);
}

// `npm run bench`: speed figures as ratios against a baseline measured in the same run.
// Never asserted in tests (DEVELOPERS.md): this prints, and exits 0.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env.BENCH_RUNS ?? 10);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function time(command, args) {
  const samples = [];
  for (let i = 0; i < runs + 1; i += 1) {
    const start = process.hrtime.bigint();
    const result = spawnSync(command, args, {
      cwd: root,
      stdio: 'ignore',
      env: { ...process.env, NO_COLOR: '1' },
    });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited ${result.status}`);
    if (i > 0) samples.push(ms); // the first run warms the disk cache and tsx's cache
  }
  return median(samples);
}

const baseline = time(process.execPath, ['-e', '0']);
const rows = [
  ['node -e 0 (baseline)', baseline],
  ['fabric --help (node)', time(process.execPath, ['bin/fabric.mjs', '--help'])],
  ['fabric specialists (node)', time(process.execPath, ['bin/fabric.mjs', 'specialists'])],
  [
    'fabric --help (deno)',
    time(join(root, 'node_modules/.bin/deno'), [
      'run',
      '-A',
      '--quiet',
      'src/interfaces/cli/main.ts',
      '--help',
    ]),
  ],
];
console.log(`CLI start-up, median of ${runs} runs:`);
for (const [name, ms] of rows)
  console.log(`  ${name.padEnd(28)} ${ms.toFixed(0).padStart(6)} ms  ${(ms / baseline).toFixed(2)}x`);

// Start-up (SPEC §15): `fabric --help` and `fabric specialists` against `node -e 0`, each a new
// process, median of N. Plain JavaScript: it times processes and needs no TypeScript itself.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const quick = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== '0';
const forced = Number(process.env.BENCH_ROUNDS);
const runs = Number.isInteger(forced) && forced > 0 ? forced : quick ? 3 : 10;
const deno = join(root, 'node_modules/.bin/deno');

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
// bin/fabric.mjs runs the build (dist/; `npm run bench` builds first), as the package ships it.
const rows = [
  ['node -e 0 (baseline)', baseline],
  ['fabric --help (node)', time(process.execPath, ['bin/fabric.mjs', '--help'])],
  ['fabric specialists (node)', time(process.execPath, ['bin/fabric.mjs', 'specialists'])],
  // What start-up cost before the build (issue 13): the sources through tsx.
  [
    'fabric --help (node, sources via tsx)',
    time(process.execPath, ['test/support/fabric-source.mjs', '--help']),
  ],
];
if (existsSync(deno))
  rows.push(['fabric --help (deno)', time(deno, ['run', '-A', '--quiet', 'bin/fabric.mjs', '--help'])]);
else console.log(`  (no ${deno}: the Deno row is left out)`);

const width = Math.max(...rows.map(([name]) => name.length));
console.log(`\nCLI start-up, median of ${runs} runs\n`);
console.log(`| ${'command'.padEnd(width)} |     ms |     x |`);
console.log(`|${'-'.repeat(width + 2)}|-------:|------:|`);
for (const [name, ms] of rows)
  console.log(
    `| ${name.padEnd(width)} | ${ms.toFixed(0).padStart(6)} | ${(ms / baseline).toFixed(2).padStart(4)}x |`,
  );

// `npm run build`: the sources compiled to JavaScript with declarations in dist/ (tsc; no
// bundler, so dist/ mirrors src/ and the package's modules stay separately importable), plus the
// plain .mjs modules tsc does not copy (the PGlite worker and init scripts).
//
// The build is written beside dist/ and swapped in at the end, so a process running the
// previous build (a test suite in another checkout's terminal, a `fabric serve`) never sees a
// half-written or half-deleted dist/.
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');
const next = join(root, `.dist-${process.pid}`);
const previous = join(root, `.dist-old-${process.pid}`);

// --noCheck: emit only. The type check is `tsc --noEmit` (npm test runs it before the build), so
// the build does not check everything twice, and halves its time.
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--noCheck', '--outDir', next],
  { cwd: root, stdio: 'inherit' },
);
if (tsc.status !== 0) {
  rmSync(next, { recursive: true, force: true });
  process.exit(tsc.status ?? 1);
}
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.mjs')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(next, relative(src, from)));
}
// Another build may swap its own in between two renames: move that aside too, and try again.
for (let attempt = 0; ; attempt += 1) {
  try {
    if (existsSync(dist)) renameSync(dist, `${previous}-${attempt}`);
    renameSync(next, dist);
    break;
  } catch (error) {
    if (attempt >= 5) throw error;
  }
}
for (const entry of readdirSync(root)) {
  if (entry.startsWith(`.dist-old-${process.pid}`))
    rmSync(join(root, entry), { recursive: true, force: true });
}
chmodSync(join(root, 'bin/fabric.mjs'), 0o755);

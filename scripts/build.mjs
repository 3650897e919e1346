// `npm run build`: the sources compiled to JavaScript with declarations in dist/ (tsc; no
// bundler, so dist/ mirrors src/ and the package's modules stay separately importable), plus the
// plain .mjs modules tsc does not copy (the PGlite worker and init scripts).
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const dist = join(root, 'dist');

rmSync(dist, { recursive: true, force: true });
const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
for (const entry of readdirSync(src, { recursive: true, withFileTypes: true })) {
  if (!entry.isFile() || !entry.name.endsWith('.mjs')) continue;
  const from = join(entry.parentPath, entry.name);
  cpSync(from, join(dist, relative(src, from)));
}
chmodSync(join(root, 'bin/fabric.mjs'), 0o755);

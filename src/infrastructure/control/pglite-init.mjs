// Creates an embedded control database's data directory (PGlite's initdb), then exits. Run as a
// short-lived child process by pglite-data-dir.ts: initdb peaks near 800 MB of memory, which a
// worker thread would leave as the long-lived process's peak, while a store reopened afterwards
// peaks near 220 MB. Plain JavaScript, started by the runtime as it is.
//
// With a cache directory (second argument), the freshly made directory is kept there once as a
// compressed dump for this PGlite version, and later data directories are unpacked from it
// instead of running initdb again: on 2 cores, 5.7 s for initdb, 2.0 s from the dump. A dump
// that cannot be read is removed and initdb runs as without one; one that cannot be written
// is left out. Nothing but the initdb output is kept: the fabric's schema is migrated later.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';

const [dataDir, cacheDir] = process.argv.slice(2);
if (!dataDir) {
  process.stderr.write('usage: pglite-init.mjs DATA_DIR [CACHE_DIR]\n');
  process.exit(2);
}
const version = cacheDir ? await pgliteVersion() : null;
const template = version ? join(cacheDir, `pglite-${version}-initdb.tar.gz`) : null;
if (template !== null && (await fromTemplate(template))) process.exit(0);
const db = await PGlite.create(dataDir);
if (template !== null) await keep(db, template);
await db.close();

/** The data directory unpacked from the kept dump; false (and the dump gone) when that fails. */
async function fromTemplate(path) {
  let bytes;
  try {
    bytes = await readFile(path);
  } catch {
    return false;
  }
  try {
    const db = await PGlite.create(dataDir, { loadDataDir: new Blob([bytes]) });
    await db.query('select 1');
    await db.close();
    return true;
  } catch {
    await rm(path, { force: true });
    await rm(dataDir, { recursive: true, force: true });
    return false;
  }
}

/** Writes the dump beside its place and moves it in whole, so no reader sees half of it. */
async function keep(db, path) {
  const pending = `${path}.${process.pid}.tmp`;
  try {
    const dump = await db.dumpDataDir('gzip');
    await mkdir(dirname(path), { recursive: true });
    await writeFile(pending, new Uint8Array(await dump.arrayBuffer()));
    await rename(pending, path);
  } catch {
    await rm(pending, { force: true }).catch(() => {});
  }
}

/** PGlite's version, from its package.json (not in its exports): a dump is only read by its own. */
async function pgliteVersion() {
  let dir = dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite')));
  for (;;) {
    try {
      const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
      if (manifest.name === '@electric-sql/pglite') return manifest.version;
    } catch {
      // not this directory: go up
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

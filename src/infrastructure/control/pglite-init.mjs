// Creates an embedded control database's data directory (PGlite's initdb), then exits. Run as a
// short-lived child process by pglite-data-dir.ts: initdb peaks near 800 MB of memory, which a
// worker thread would leave as the long-lived process's peak, while a store reopened afterwards
// peaks near 220 MB. Plain JavaScript, started by the runtime as it is.
import { PGlite } from '@electric-sql/pglite';

const dataDir = process.argv[2];
if (!dataDir) {
  process.stderr.write('usage: pglite-init.mjs DATA_DIR\n');
  process.exit(2);
}
const db = await PGlite.create(dataDir);
await db.close();

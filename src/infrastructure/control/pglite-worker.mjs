// The embedded control database runs here, in a worker thread: PGlite is Postgres compiled to
// WASM and runs synchronously, so on the main thread opening it or writing a batch would stall
// the run's event loop (mirroring must never slow a run). Plain JavaScript, so Node and
// Deno start it as it is, without a TypeScript loader in the worker.
import { parentPort, workerData } from 'node:worker_threads';

const SMALL_MEMORY = [
  '-c',
  'shared_buffers=16MB',
  '-c',
  'work_mem=1MB',
  '-c',
  'temp_buffers=1MB',
  '-c',
  'wal_buffers=256kB',
];

let db = null;
let opening = null;

async function open() {
  if (db) return db;
  if (!opening) {
    opening = import('@electric-sql/pglite').then(({ PGlite }) =>
      PGlite.create(workerData.dataDir, {
        // Postgres's default shared_buffers (128 MB) is for a server; the mirror writes small
        // batches. Measured on reopening a data directory and writing 10k events: peak RSS
        // 364 MiB with the defaults, 219 MiB with these.
        startParams: [...PGlite.defaultStartParams, ...SMALL_MEMORY],
      }),
    );
  }
  db = await opening;
  return db;
}

parentPort.on('message', async (message) => {
  const { id, op } = message;
  try {
    if (op === 'query') {
      const database = await open();
      const result = await database.query(message.text, message.params ?? []);
      parentPort.postMessage({ id, ok: true, rows: result.rows });
    } else if (op === 'close') {
      if (opening) await (await opening.catch(() => null))?.close();
      db = null;
      opening = null;
      parentPort.postMessage({ id, ok: true, rows: [] });
    } else {
      parentPort.postMessage({ id, ok: false, error: { message: `unknown operation ${op}` } });
    }
  } catch (error) {
    // A failed open is retried by the next query.
    if (!db) opening = null;
    parentPort.postMessage({
      id,
      ok: false,
      error: { message: error instanceof Error ? error.message : String(error), code: error?.code },
    });
  }
});

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const dirs: string[] = [];

// Registered once per test file (vitest evaluates this module per file): nothing is left in /tmp.
afterAll(async () => {
  // Retried: a process a test stopped may still be finishing a write inside (ENOTEMPTY under load).
  await Promise.all(
    dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 })),
  );
});

/** A fresh temp directory, removed when the test file is done. */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

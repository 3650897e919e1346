import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { SlowFirst } from './test/support/slow-first.ts';

export default defineConfig({
  // Packs import the pack API as a user's would; in the tests that is the sources.
  resolve: { alias: { 'agent-fabric': fileURLToPath(new URL('./src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two cores: CLI and cargo tests spawn processes of their own.
    maxWorkers: 2,
    // The slowest files first, so the two workers end together (test/support/slow-first.ts).
    sequence: { sequencer: SlowFirst },
  },
});

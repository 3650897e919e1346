import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PgliteControlStore } from '../../../src/infrastructure/control/pglite-control-store.ts';
import { type ControlStoreHarness, controlStoreContract } from './control-store-contract.ts';
import { tempRunsDir } from './fixtures.ts';

let dataDir: string;
let harness: ControlStoreHarness;

beforeAll(async () => {
  dataDir = join(await tempRunsDir(), '.control', 'pglite');
  // initdb of the embedded database, once for the file: later opens only reopen it.
  const store = new PgliteControlStore(dataDir);
  await store.migrate();
  await store.close();
  harness = {
    open: async () => new PgliteControlStore(dataDir),
    // A data directory below a file can never be created.
    openUnreachable: () => new PgliteControlStore('/dev/null/pglite'),
    async openInterruptible() {
      const store = new PgliteControlStore(dataDir);
      // Closing the embedded database under the mirror is the embedded form of "the server stopped".
      return { store, interrupt: () => store.close() };
    },
  };
});

afterAll(() => {});

controlStoreContract('PGlite', () => harness);

describe('PgliteControlStore', () => {
  it('refuses a second open of the same data directory instead of corrupting it', async () => {
    const first = new PgliteControlStore(dataDir);
    const second = new PgliteControlStore(dataDir);
    try {
      await first.migrate();
      await expect(second.migrate()).rejects.toThrow(/already open in this process/);
    } finally {
      await second.close();
      await first.close();
    }
    const third = new PgliteControlStore(dataDir);
    await expect(third.migrate()).resolves.toMatchObject({ applied: [] });
    await third.close();
  });
});

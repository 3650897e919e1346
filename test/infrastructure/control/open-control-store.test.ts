import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  embeddedControlDir,
  openControlStore,
} from '../../../src/infrastructure/control/open-control-store.ts';

describe('openControlStore', () => {
  it('returns no store when the control plane is disabled', async () => {
    expect(
      await openControlStore({ enabled: false, dsn: 'postgres://x@127.0.0.1/y', runsDir: './runs' }),
    ).toBeNull();
  });

  it('uses the Postgres server a DSN names', async () => {
    const store = await openControlStore({
      enabled: true,
      dsn: 'postgres://fabric:pw@127.0.0.1:1/fabric',
      runsDir: './runs',
    });
    expect(store?.kind).toBe('postgres');
    expect(store?.location).toBe('postgres://fabric:***@127.0.0.1:1/fabric');
    await store?.close();
  });

  it('defaults to the embedded database under the runs directory, without opening it', async () => {
    const store = await openControlStore({ enabled: true, runsDir: './some-runs' });
    expect(store?.kind).toBe('pglite');
    expect(store?.location).toBe(join(resolve('./some-runs'), '.control', 'pglite'));
    expect(embeddedControlDir('/srv/runs')).toBe('/srv/runs/.control/pglite');
    await store?.close();
    const blank = await openControlStore({ enabled: true, dsn: '  ', runsDir: '/srv/runs' });
    expect(blank?.kind).toBe('pglite');
  });
});

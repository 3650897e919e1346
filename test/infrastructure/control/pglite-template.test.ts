import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PgliteControlStore } from '../../../src/infrastructure/control/pglite-control-store.ts';

// A new embedded database starts from initdb's output kept in the fabric's cache, once per
// PGlite version (pglite-init.mjs): what is kept, that it is used, and that a bad one is not.

const dirs: string[] = [];
async function temp(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A store in a new runs directory: migrated, a table read, closed. */
async function useNewStore(cacheDir: string | null): Promise<string> {
  const dataDir = join(await temp('fabric-template-runs-'), '.control', 'pglite');
  const store = new PgliteControlStore(dataDir, { cacheDir });
  try {
    await store.migrate();
    expect(await store.battery('none')).toBeNull();
  } finally {
    await store.close();
  }
  return dataDir;
}

async function kept(cacheDir: string): Promise<string[]> {
  return (await readdir(cacheDir)).filter((name) => /^pglite-.+-initdb\.tar\.gz$/.test(name));
}

describe('a new embedded database and the fabric cache', () => {
  let cacheDir: string;
  let name: string;
  beforeAll(async () => {
    cacheDir = await mkdtemp(join(tmpdir(), 'fabric-cache-'));
    await useNewStore(cacheDir);
    name = (await kept(cacheDir))[0] ?? '';
  }, 120_000);
  afterAll(() => rm(cacheDir, { recursive: true, force: true }));

  it('keeps initdb output once, as a gzip, and starts the next new database from it', async () => {
    expect(await readdir(cacheDir)).toEqual([name]);
    const bytes = await readFile(join(cacheDir, name));
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);

    // What the next database starts from is what is kept: a marked dump put in its place
    // shows up in the next new database.
    const marked = await PGlite.create(join(await temp('fabric-marked-'), 'db'), {
      loadDataDir: new Blob([bytes]),
    });
    await marked.exec('create table kept_marker (id int); insert into kept_marker values (7)');
    await writeFile(
      join(cacheDir, name),
      new Uint8Array(await (await marked.dumpDataDir('gzip')).arrayBuffer()),
    );
    await marked.close();
    const dataDir = await useNewStore(cacheDir);
    const reopened = await PGlite.create(dataDir);
    expect((await reopened.query<{ id: number }>('select id from kept_marker')).rows).toEqual([{ id: 7 }]);
    await reopened.close();
  });

  it('runs initdb when the kept dump is unreadable, and keeps a good one in its place', async () => {
    await writeFile(join(cacheDir, name), 'not a dump');
    const dataDir = await useNewStore(cacheDir);
    expect(await readdir(cacheDir)).toEqual([name]);
    const bytes = await readFile(join(cacheDir, name));
    expect([bytes[0], bytes[1]]).toEqual([0x1f, 0x8b]);
    const reopened = await PGlite.create(dataDir);
    expect((await reopened.query("select to_regclass('kept_marker') as t")).rows).toEqual([{ t: null }]);
    await reopened.close();
  });

  it('goes on without a cache where none can be written', async () => {
    const parent = await temp('fabric-cache-parent-');
    const blocked = join(parent, 'a-file');
    await writeFile(blocked, 'in the way');
    await useNewStore(join(blocked, 'cache'));
    expect(await readdir(parent)).toEqual(['a-file']);
  });
});

import { mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { FabricError } from '../../../src/domain/errors.ts';
import { packWorkspace, unpackWorkspace } from '../../../src/infrastructure/workspace/workspace-archive.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const LIMIT = { maxBytes: 1024 * 1024, key: 'worker.archive_max_mib' };

describe('packWorkspace and unpackWorkspace', () => {
  it('round-trips files, directories, modes and links, leaving out .git, the root target/ and the runs directory', async () => {
    const source = await tempDir('fabric-archive-src-');
    await mkdir(join(source, 'src/nested'), { recursive: true });
    await mkdir(join(source, '.git'));
    await mkdir(join(source, 'target'));
    await mkdir(join(source, 'runs'));
    await writeFile(join(source, 'Cargo.toml'), '[package]\nname = "x"\n');
    await writeFile(join(source, 'src/nested/lib.rs'), Buffer.from([0, 1, 2, 255, 10]));
    await writeFile(join(source, 'run.sh'), '#!/bin/sh\n', { mode: 0o755 });
    await writeFile(join(source, '.git/HEAD'), 'ref');
    await writeFile(join(source, 'target/big'), 'x');
    await writeFile(join(source, 'runs/r.jsonl'), '{}');
    await symlink('Cargo.toml', join(source, 'link'));

    const archive = await packWorkspace(source, LIMIT, [join(source, 'runs')]);
    const target = await tempDir('fabric-archive-dst-');
    await unpackWorkspace(archive, target);

    expect(await readFile(join(target, 'Cargo.toml'), 'utf8')).toBe('[package]\nname = "x"\n');
    expect([...(await readFile(join(target, 'src/nested/lib.rs')))]).toEqual([0, 1, 2, 255, 10]);
    expect((await stat(join(target, 'run.sh'))).mode & 0o777).toBe(0o755);
    expect(await readlink(join(target, 'link'))).toBe('Cargo.toml');
    for (const gone of ['.git', 'target', 'runs'])
      await expect(stat(join(target, gone)), gone).rejects.toThrow();
  });

  it('refuses a workspace over the limit, naming the limit and its config key', async () => {
    const source = await tempDir('fabric-archive-big-');
    await writeFile(join(source, 'a.bin'), Buffer.alloc(700 * 1024));
    await writeFile(join(source, 'b.bin'), Buffer.alloc(700 * 1024));
    const refused = await packWorkspace(source, LIMIT).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(FabricError);
    expect((refused as FabricError).code).toBe('workspace_too_large');
    expect((refused as FabricError).message).toMatch(/more than 1 MiB.*worker\.archive_max_mib/);
  });

  it('refuses an archive whose entries would land outside the target', async () => {
    const hostile = gzipSync(
      Buffer.from(`fabric-archive 1\n${JSON.stringify({ p: '../escape', t: 'f', m: 420, s: 1 })}\nx`),
    );
    const target = await tempDir('fabric-archive-hostile-');
    await expect(unpackWorkspace(hostile, target)).rejects.toThrow(/outside/);
  });
});

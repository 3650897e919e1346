import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.ts';
import { type Sandbox, makeSandbox, runFabricInProcess } from '../../support/fabric-cli.ts';
import { tempDir } from '../../support/temp-dirs.ts';

describe('fabric init', () => {
  let dir: string;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
    dir = await tempDir('fabric-init-');
  });
  afterEach(async () => {
    await sandbox.cleanup();
  });
  const init = (args: string[]) => runFabricInProcess(['init', ...args], { env: {}, cwd: dir });

  it('writes a config that names the starter pack by path and export, next to it', async () => {
    const result = await init(['--pack', 'notes', '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      config: join(dir, 'fabric.yaml'),
      pack: join(dir, 'notes.pack.ts'),
      specialist: 'notes',
    });
    const config = await loadConfig({ cwd: dir, env: {} });
    expect(config.specialists.notes?.builder).toBe('./notes.pack.ts#buildPack');
    expect(config.specialists.rust?.workspace).toBe(dir);
    const pack = await readFile(join(dir, 'notes.pack.ts'), 'utf8');
    expect(pack).toContain("from 'agent-fabric'");
    expect(pack).toContain('builder: ./notes.pack.ts#buildPack');
  });

  it('leaves existing files alone unless --force, and refuses a bad pack name', async () => {
    await writeFile(join(dir, 'fabric.yaml'), 'mine\n');
    const refused = await init([]);
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toContain(`${join(dir, 'fabric.yaml')} already exists; nothing was written`);
    expect(await readFile(join(dir, 'fabric.yaml'), 'utf8')).toBe('mine\n');
    expect((await init(['--force'])).exitCode).toBe(0);
    expect(await readFile(join(dir, 'fabric.yaml'), 'utf8')).toContain('units.pack.ts#buildPack');
    const bad = await init(['--pack', '../evil']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('a pack name is lower-case letters');
  });
});

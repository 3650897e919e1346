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

  it('writes the example battery file, whose comment names the command that runs it where it was written', async () => {
    const result = await init(['--example', 'compositor']);
    expect(result.exitCode, result.stderr).toBe(0);
    const battery = await readFile(join(dir, 'compositor-battery.yaml'), 'utf8');
    const [, command] = /^# {3}(fabric battery \S+)/m.exec(battery) ?? [];
    expect(command).toBe('fabric battery compositor-battery.yaml');
    expect(result.stdout).toContain(command);
  });

  it('adds a second pack to an existing fabric.yaml, keeping its keys and comments', async () => {
    expect((await init([])).exitCode).toBe(0);
    const config = join(dir, 'fabric.yaml');
    const before = `# my own comment\n${await readFile(config, 'utf8')}loop:\n  max_steps: 12 # mine too\n`;
    await writeFile(config, before);
    const result = await init(['--pack', 'notes']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toContain('Wrote notes.pack.ts and added the specialist notes to fabric.yaml.');
    const text = await readFile(config, 'utf8');
    // The entry is the only change: the file's layout (aligned comments, long lines, flow lists)
    // stays as the user wrote it (issue 20).
    const entry = /^ {2}notes:\n {4}description: .*\n {4}builder: \.\/notes\.pack\.ts#buildPack\n/m;
    expect(text).toMatch(entry);
    expect(text.replace(entry, '')).toBe(before);
    expect(text).toMatch(/^# my own comment\n/);
    expect(text).toContain('max_steps: 12 # mine too');
    const loaded = await loadConfig({ cwd: dir, env: {} });
    expect(Object.keys(loaded.specialists)).toEqual(['units', 'rust', 'research', 'notes']);
    expect(loaded.specialists.notes?.builder).toBe('./notes.pack.ts#buildPack');
    expect(loaded.specialists.units?.builder).toBe('./units.pack.ts#buildPack');
    expect(loaded.loop.max_steps).toBe(12);
    expect(await readFile(join(dir, 'notes.pack.ts'), 'utf8')).toContain(
      'builder: ./notes.pack.ts#buildPack',
    );
  });

  it('refuses to add a pack whose specialist or file already exists, and says what to do', async () => {
    expect((await init([])).exitCode).toBe(0);
    const before = await readFile(join(dir, 'fabric.yaml'), 'utf8');
    const again = await init(['--pack', 'units']);
    expect(again.exitCode).toBe(2);
    expect(again.stderr).toContain(
      `${join(dir, 'fabric.yaml')} already has a specialist "units"; nothing was written.`,
    );
    expect(again.stderr).toContain('Pick another name with --pack NAME');
    await writeFile(join(dir, 'notes.pack.ts'), '// mine\n');
    const taken = await init(['--pack', 'notes']);
    expect(taken.exitCode).toBe(2);
    expect(taken.stderr).toContain(`${join(dir, 'notes.pack.ts')} already exists; nothing was written.`);
    expect(await readFile(join(dir, 'notes.pack.ts'), 'utf8')).toBe('// mine\n');
    expect(await readFile(join(dir, 'fabric.yaml'), 'utf8')).toBe(before);
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

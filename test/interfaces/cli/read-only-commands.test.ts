import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { spawnFabric } from '../../support/fabric-cli.ts';
import { tempDir } from '../../support/temp-dirs.ts';

/** The CLI in a directory with no config and no runs: the defaults (embedded control plane, ./runs). */
async function inEmptyDir(dir: string, args: string[]) {
  return spawnFabric(args, { env: { NO_COLOR: '1', LM_STUDIO_URL: 'http://127.0.0.1:9' }, cwd: dir });
}

describe('commands that read never create the embedded control database', () => {
  it('`fabric runs` in an empty directory says there are none and leaves nothing behind', async () => {
    const dir = await tempDir('fabric-empty-');
    const listed = await inEmptyDir(dir, ['runs']);
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('No runs yet');
    expect(listed.stdout).not.toContain('pglite');
    const json = await inEmptyDir(dir, ['runs', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      runs: [],
      source: expect.stringMatching(/^runlogs in /),
    });
    // Not even the runs directory, let alone runs/.control/pglite.
    expect(await readdir(dir)).toEqual([]);
  });

  it('`fabric runs show` of an unknown id says there is no such run and leaves nothing behind', async () => {
    const dir = await tempDir('fabric-empty-');
    const shown = await inEmptyDir(dir, ['runs', 'show', 'no-such-run']);
    expect(shown.exitCode).toBe(2);
    expect(shown.stderr).toMatch(/No run "no-such-run"/);
    const json = await inEmptyDir(dir, ['runs', 'show', '20261128T000000Z-abcdef', '--json']);
    expect(json.exitCode).toBe(2);
    expect(await readdir(dir)).toEqual([]);
  });

  it('`fabric control export` in an empty directory says there is nothing and writes nothing', async () => {
    const dir = await tempDir('fabric-empty-');
    const exported = await inEmptyDir(dir, ['control', 'export']);
    expect(exported.exitCode, exported.stderr).toBe(0);
    expect(exported.stdout).toMatch(/^Nothing to export: no runs yet in \S+runs\. No files written\.$/);
    const json = await inEmptyDir(dir, ['control', 'export', '--json']);
    expect(JSON.parse(json.stdout)).toEqual({ files: [], db_off: true, runs: 0 });
    expect(await readdir(dir)).toEqual([]);
  });
});

import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { releasePidFile, takePidFile } from '../../../src/infrastructure/process/pid-file.ts';
import { tempDir } from '../../support/temp-dirs.ts';

/** A holder reader for tests: the text is the holder, `stale` marks a stale one. */
const byText = { attempts: 2, holder: (text: string) => (text === 'stale' ? undefined : text) };

describe('pid-file locks', () => {
  it('creates the file with its content when nobody holds it', async () => {
    const file = join(await tempDir('pid-file-'), 'x.lock');
    expect(await takePidFile(file, 'me', byText)).toEqual({ taken: true });
    expect(await readFile(file, 'utf8')).toBe('me');
  });

  it('answers with the live holder and leaves its file alone', async () => {
    const file = join(await tempDir('pid-file-'), 'x.lock');
    await writeFile(file, 'other');
    expect(await takePidFile(file, 'me', byText)).toEqual({ taken: false, holder: 'other' });
    expect(await readFile(file, 'utf8')).toBe('other');
  });

  it('removes a stale holder and takes the file', async () => {
    const file = join(await tempDir('pid-file-'), 'x.lock');
    await writeFile(file, 'stale');
    expect(await takePidFile(file, 'me', byText)).toEqual({ taken: true });
    expect(await readFile(file, 'utf8')).toBe('me');
  });

  it('releases only its own content when told what it wrote', async () => {
    const file = join(await tempDir('pid-file-'), 'x.lock');
    await writeFile(file, 'other');
    await releasePidFile(file, 'me');
    expect(await readFile(file, 'utf8')).toBe('other');
    await releasePidFile(file);
    await expect(readFile(file, 'utf8')).rejects.toThrow(/ENOENT/);
    await releasePidFile(file);
  });
});

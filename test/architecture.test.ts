import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './support/fabric-cli.ts';

async function sources(dir: string): Promise<string[]> {
  const entries = await readdir(join(ROOT, dir), { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

async function importsOf(file: string): Promise<string[]> {
  const text = await readFile(join(ROOT, file), 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map(
    (match) => match[1]!,
  );
}

describe('the layers of SPEC §2', () => {
  it('keeps domain/ free of I/O, runtime modules and other layers', async () => {
    for (const file of await sources('src/domain')) {
      for (const spec of await importsOf(file)) {
        expect(`${file} -> ${spec}`).not.toMatch(
          /-> (node:|.*\/(application|infrastructure|interfaces|config)\/)/,
        );
      }
    }
  });

  it('keeps application/ free of adapters, interfaces and runtime modules', async () => {
    for (const file of await sources('src/application')) {
      for (const spec of await importsOf(file)) {
        expect(`${file} -> ${spec}`).not.toMatch(/-> (node:|.*\/(infrastructure|interfaces)\/)/);
      }
    }
  });

  it('reads the environment only in src/config/', async () => {
    for (const file of await sources('src')) {
      if (file.startsWith('src/config/')) continue;
      const text = await readFile(join(ROOT, file), 'utf8');
      expect(`${file}: ${/process\.env|Deno\.env/.test(text)}`).toBe(`${file}: false`);
    }
  });
});

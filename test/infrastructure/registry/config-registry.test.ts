import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/load.ts';
import { FabricError, ToolError } from '../../../src/domain/errors.ts';
import { BUILTIN_PACKS } from '../../../src/infrastructure/registry/builtin-packs.ts';
import { ConfigRegistry } from '../../../src/infrastructure/registry/config-registry.ts';
import { ROOT } from '../../support/fabric-cli.ts';
import { tempDir } from '../../support/temp-dirs.ts';

async function registryFor(specialists: Record<string, unknown>, baseDir = ROOT) {
  const config = await buildConfig({ specialists }, join(baseDir, 'fabric.yaml'), {}, baseDir);
  return new ConfigRegistry({
    specialists: config.specialists,
    baseDir,
    builtins: {},
    settings: { searxngUrl: undefined },
  });
}

async function failure(promise: Promise<unknown>): Promise<FabricError> {
  const error = await promise.catch((e: unknown) => e);
  if (!(error instanceof FabricError)) throw new Error(`expected a FabricError, got ${String(error)}`);
  return error;
}

describe('ConfigRegistry', () => {
  it('builds the example custom pack from a config entry alone', async () => {
    const registry = await registryFor({ units: { builder: './packs/example/pack.ts#buildPack' } });
    const pack = await registry.getPack('units', {});
    await pack.open(new AbortController().signal);
    expect(pack.tools().map((tool) => tool.spec.name)).toEqual(['convert_units']);
    expect(pack.finish.validate({ summary: 's' })).toMatchObject({ ok: false });
    const tool = pack.tools()[0]!;
    const context = { runId: 'r', step: 1, signal: new AbortController().signal };
    expect(await tool.run({ value: 100, from: 'c', to: 'f' }, context)).toBe('100 c = 212 f');
    await pack.close();
  });

  it('names the specialist and the path when the builder module does not exist', async () => {
    const registry = await registryFor({ broken: { builder: './packs/nope.ts#buildPack' } });
    const error = await failure(registry.getPack('broken', {}));
    expect(error.code).toBe('pack_load_failed');
    expect(error.message).toMatch(/Specialist "broken".*packs\/nope\.ts/);
  });

  it('lists the exports when the export name is wrong', async () => {
    const registry = await registryFor({ units: { builder: './packs/example/pack.ts#build' } });
    expect((await failure(registry.getPack('units', {}))).message).toMatch(
      /no function export "build".*buildPack/,
    );
  });

  it('explains the builder syntax when it has no export name', async () => {
    const registry = await registryFor({ units: { builder: './packs/example/pack.ts' } });
    expect((await failure(registry.getPack('units', {}))).message).toMatch(/<module path>#<export name>/);
  });

  it('rejects an unknown builtin and a builder that returns no pack', async () => {
    const dir = await tempDir('fabric-registry-');
    await writeFile(join(dir, 'bad.mjs'), 'export const make = () => ({ name: "half" });\n');
    const registry = await registryFor(
      { a: { builder: 'builtin:nope' }, b: { builder: './bad.mjs#make' } },
      dir,
    );
    expect((await failure(registry.getPack('a', {}))).message).toMatch(/unknown builder "builtin:nope"/);
    expect((await failure(registry.getPack('b', {}))).message).toMatch(/did not return a pack/);
  });

  it('lists the configured specialists, and names them when one is unknown', async () => {
    const registry = await registryFor({ units: { builder: './packs/example/pack.ts#buildPack' } });
    expect(registry.list().map((s) => s.name)).toEqual(['units']);
    const error = await failure(registry.getPack('rust', {}));
    expect(error.code).toBe('specialist_unknown');
    expect(error.message).toMatch(/Configured specialists: units/);
  });

  it('hands every pack the runs directory and config file, and the rust pack keeps its tools out of them', async () => {
    const dir = await tempDir('fabric-registry-record-');
    await mkdir(join(dir, 'runs', 'r1'), { recursive: true });
    await writeFile(join(dir, 'runs', 'r1', 'runlog.jsonl'), '{}\n');
    await writeFile(join(dir, 'fabric.yaml'), 'specialists: {}\n');
    const config = await buildConfig(
      { specialists: { rust: { builder: 'builtin:rust' } } },
      join(dir, 'fabric.yaml'),
      {},
      dir,
    );
    const seen: unknown[] = [];
    const registry = new ConfigRegistry({
      specialists: config.specialists,
      baseDir: dir,
      builtins: BUILTIN_PACKS,
      settings: { searxngUrl: undefined, runsDir: config.runs_dir, configFile: config.source },
      wrap: (pack, _name, _config, context) => {
        seen.push(context.settings);
        return pack;
      },
    });
    const pack = await registry.getPack('rust', { workspace: dir });
    expect(seen).toEqual([
      { searxngUrl: undefined, runsDir: join(dir, 'runs'), configFile: join(dir, 'fabric.yaml') },
    ]);
    const write = pack.tools().find((tool) => tool.spec.name === 'write_file')!;
    const context = { runId: 'r', step: 1, signal: new AbortController().signal };
    for (const path of ['runs/r1/runlog.jsonl', 'fabric.yaml']) {
      const error = await write.run({ path, content: 'forged' }, context).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as ToolError).securityEvent).toMatchObject({ eventType: 'sandbox_violation' });
    }
    expect(await readFile(join(dir, 'runs', 'r1', 'runlog.jsonl'), 'utf8')).toBe('{}\n');
  });
});

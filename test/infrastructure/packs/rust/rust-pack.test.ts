import { cp, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hasFinishGate, type SpecialistPack } from '../../../../src/application/ports.ts';
import { FabricError } from '../../../../src/domain/errors.ts';
import { buildRustPack } from '../../../../src/infrastructure/packs/rust/rust-pack.ts';
import { call, expectToolError, rustPack, tempDir, toolContext } from './helpers.ts';

const EXAMPLE = fileURLToPath(new URL('../../../../examples/compositor', import.meta.url));
let base: string;
let ws: string;
let cleanup: () => Promise<void>;
let pack: SpecialistPack;

beforeAll(async () => {
  const temp = await tempDir('fabric-rustpack-');
  cleanup = temp.cleanup;
  base = temp.dir;
  ws = path.join(base, 'compositor');
  await cp(EXAMPLE, ws, { recursive: true, filter: (source) => !source.includes(`${path.sep}target`) });
  pack = await rustPack(ws);
});

afterAll(async () => {
  await pack.close();
  await cleanup();
});

describe('buildRustPack', () => {
  it('refuses to build without a workspace and says how to give one', async () => {
    const built = buildRustPack({
      specialist: 'rusty',
      config: {
        builder: 'builtin:rust',
        description: '',
        network_allowed: false,
        allowed_hosts: [],
        mcp_servers: {},
        options: {},
      },
      workspace: undefined,
      settings: { searxngUrl: undefined },
    });
    await expect(built).rejects.toThrow(FabricError);
    await expect(built).rejects.toThrow(/"rusty" needs a workspace.*--workspace/);
  });

  it('names the specialist and the path when the workspace is missing or a file', async () => {
    await expect(rustPack(path.join(base, 'nope'))).rejects.toThrow(/"rust".*nope does not exist/);
    await writeFile(path.join(base, 'file.txt'), 'x');
    await expect(rustPack(path.join(base, 'file.txt'))).rejects.toThrow(/file\.txt is not a directory/);
  });

  it('has a compositor system prompt and a finish schema whose summary is required', () => {
    expect(pack.systemPrompt).toMatch(/Smithay/);
    expect(pack.systemPrompt).toMatch(/DRM\/KMS/);
    expect(pack.systemPrompt).toMatch(/wgpu/);
    expect(pack.finish.parameters).toMatchObject({ required: ['summary'] });
    expect(pack.finish.validate({ artifacts: [] })).toMatchObject({ ok: false });
    expect(pack.finish.validate({ summary: 'done', next_steps: ['more'] })).toMatchObject({ ok: true });
  });

  it('defaults the shell allowlist to the cargo commands when no sandbox is configured', async () => {
    const defaults = await buildRustPack({
      specialist: 'rust',
      config: {
        builder: 'builtin:rust',
        description: '',
        network_allowed: false,
        allowed_hosts: [],
        mcp_servers: {},
        options: {},
      },
      workspace: ws,
      settings: { searxngUrl: undefined },
    });
    const shell = defaults.tools().find((tool) => tool.spec.name === 'shell')!;
    expect(shell.spec.description).toContain('cargo clippy');
  });
});

describe('the example compositor workspace', () => {
  it('compiles under cargo_check and passes its unit tests under cargo test', async () => {
    expect(await call(pack, 'cargo_check', {})).toMatch(/^cargo check passed \(0 errors, 0 warnings\)/);
    expect(await call(pack, 'shell', { command: 'cargo test' })).toMatch(/test result: ok\. \d+ passed/);
  });

  it('answers a type error with compact diagnostics: level, code, file:line, message, source', async () => {
    await call(pack, 'edit_file', {
      path: 'src/geometry.rs',
      old_text: 'pub fn is_empty(&self) -> bool {\n        self.size.w <= 0 || self.size.h <= 0',
      new_text:
        'pub fn is_empty(&self) -> bool {\n        let broken: u32 = "not a number";\n        self.size.w <= 0 || self.size.h <= 0',
    });
    const report = await expectToolError(call(pack, 'cargo_check', {}));
    expect(report).toMatch(/^cargo check failed \(1 error, /);
    expect(report).toMatch(/error\[E0308\] src\/geometry\.rs:\d+:\d+: mismatched types/);
    expect(report).toContain('| let broken: u32 = "not a number";');
    expect(report).not.toMatch(/aborting due to/);
    expect(report.length).toBeLessThan(4000);
  });

  it('keeps the finish gate closed while the workspace does not compile', async () => {
    expect(hasFinishGate(pack)).toBe(true);
    if (!hasFinishGate(pack)) return;
    const gate = await pack.checkFinish({ summary: 'done' }, toolContext());
    expect(gate.ok).toBe(false);
    expect(gate.ok === false && gate.message).toMatch(/E0308/);
  });

  it('opens the finish gate once the compiler is satisfied', async () => {
    await call(pack, 'edit_file', {
      path: 'src/geometry.rs',
      old_text: '        let broken: u32 = "not a number";\n',
      new_text: '',
    });
    if (!hasFinishGate(pack)) throw new Error('no gate');
    expect(await pack.checkFinish({ summary: 'done' }, toolContext())).toEqual({
      ok: true,
      message: 'cargo check passed (0 errors, 0 warnings).',
    });
  });

  it('reports a broken manifest with cargo’s own words when there are no compiler messages', async () => {
    const original = await call(pack, 'read_file', { path: 'Cargo.toml' });
    await call(pack, 'write_file', { path: 'Cargo.toml', content: '[package\nname = \n' });
    const report = await expectToolError(call(pack, 'cargo_check', {}));
    await call(pack, 'write_file', { path: 'Cargo.toml', content: original });
    expect(report).toMatch(/^cargo check failed/);
    expect(report).toMatch(/Cargo\.toml/);
  });
});

import { existsSync } from 'node:fs';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecialistPack } from '../../../../src/application/ports.ts';
import { call, callForDiff, expectRefusal, expectToolError, rustPack, tempDir } from './helpers.ts';

const SECRET = `outside-secret-${Math.random().toString(36).slice(2)}`;
let base: string;
let ws: string;
let evil: string;
let cleanup: () => Promise<void>;
let pack: SpecialistPack;

beforeAll(async () => {
  const temp = await tempDir('fabric-files-');
  cleanup = temp.cleanup;
  base = temp.dir;
  ws = path.join(base, 'ws');
  // A sibling whose name starts with the workspace's: a string-prefix check would let it in.
  evil = path.join(base, 'ws-evil');
  await mkdir(path.join(ws, 'src'), { recursive: true });
  await mkdir(evil, { recursive: true });
  await mkdir(path.join(ws, '.git', 'hooks'), { recursive: true });
  await mkdir(path.join(ws, '.cargo'), { recursive: true });
  await writeFile(path.join(evil, 'secret.txt'), SECRET);
  await writeFile(path.join(ws, 'src', 'lib.rs'), 'pub fn answer() -> u32 {\n    42\n}\n');
  await writeFile(
    path.join(ws, '.git', 'config'),
    '[remote "origin"]\n\turl = https://user:token@example.com/x.git\n',
  );
  await writeFile(path.join(ws, '.cargo', 'config.toml'), '[term]\nverbose = false\n');
  await writeFile(path.join(ws, 'dup.txt'), 'same\nsame\n');
  await writeFile(path.join(ws, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 1, 2]));
  await writeFile(path.join(ws, 'huge.txt'), 'x'.repeat(300 * 1024));
  await symlink(evil, path.join(ws, 'evil-dir'));
  await symlink('/etc/passwd', path.join(ws, 'passwd'));
  await symlink(path.join(evil, 'not-yet-there.txt'), path.join(ws, 'dangling-out'));
  await symlink('missing-target.txt', path.join(ws, 'dangling-in'));
  await symlink('.cargo/config.toml', path.join(ws, 'cargo-config-alias'));
  pack = await rustPack(ws);
});

afterAll(async () => {
  await pack.close();
  await cleanup();
});

describe('the rust pack file tools', () => {
  it('offers exactly the tools SPEC §4.1 names, finish_task excluded', () => {
    expect(pack.tools().map((tool) => tool.spec.name)).toEqual([
      'list_files',
      'read_file',
      'write_file',
      'edit_file',
      'search',
      'shell',
      'cargo_check',
    ]);
  });

  it('reads, writes, edits, lists and searches inside the workspace', async () => {
    await call(pack, 'write_file', { path: 'src/new/deep/mod.rs', content: 'pub fn f() {}\n' });
    expect(await readFile(path.join(ws, 'src/new/deep/mod.rs'), 'utf8')).toBe('pub fn f() {}\n');
    await call(pack, 'edit_file', { path: 'src/lib.rs', old_text: '42', new_text: '43' });
    expect(await call(pack, 'read_file', { path: 'src/lib.rs' })).toContain('43');
    expect(await call(pack, 'list_files', {})).toContain('src/new/deep/mod.rs');
    expect(await call(pack, 'search', { pattern: 'fn \\w+\\(', path: 'src' })).toContain(
      'src/lib.rs:1:pub fn answer',
    );
  });

  it('records each write and edit as a unified diff of the file, and a new file against /dev/null', async () => {
    const created = await callForDiff(pack, 'write_file', { path: 'src/diffed.rs', content: 'fn a() {}\n' });
    expect(created.diff).toBe('--- /dev/null\n+++ b/src/diffed.rs\n@@ -0,0 +1 @@\n+fn a() {}\n');
    const replaced = await callForDiff(pack, 'write_file', { path: 'src/diffed.rs', content: 'fn b() {}\n' });
    expect(replaced.diff).toContain('-fn a() {}\n+fn b() {}\n');
    const edited = await callForDiff(pack, 'edit_file', {
      path: 'src/diffed.rs',
      old_text: 'fn b() {}',
      new_text: 'fn b() {}\nfn c() {}',
    });
    expect(edited.text).toBe('Edited src/diffed.rs. Run cargo_check next.');
    expect(edited.diff).toBe(
      '--- a/src/diffed.rs\n+++ b/src/diffed.rs\n@@ -1 +1,2 @@\n fn b() {}\n+fn c() {}\n',
    );
  });

  it('writes over a binary file without a diff', async () => {
    await writeFile(path.join(ws, 'blob.bin'), Buffer.from([0, 1, 2, 3]));
    expect(
      (await callForDiff(pack, 'write_file', { path: 'blob.bin', content: 'text now\n' })).diff,
    ).toBeUndefined();
  });

  it('refuses a path that climbs out with ..', async () => {
    await expectRefusal(call(pack, 'read_file', { path: '../ws-evil/secret.txt' }), 'outside_workspace');
  });

  it('refuses an absolute path outside the workspace', async () => {
    await expectRefusal(call(pack, 'read_file', { path: '/etc/passwd' }), 'outside_workspace');
  });

  it('treats a sibling whose name starts with the root name as outside', async () => {
    const error = await expectRefusal(
      call(pack, 'read_file', { path: path.join(evil, 'secret.txt') }),
      'outside_workspace',
    );
    expect(error.message).not.toContain(SECRET);
  });

  it('refuses a climb that hides inside a path that starts in the workspace', async () => {
    await expectRefusal(
      call(pack, 'write_file', { path: './src/../../ws-evil/planted.txt', content: 'x' }),
      'outside_workspace',
    );
    expect(existsSync(path.join(evil, 'planted.txt'))).toBe(false);
  });

  it('refuses to read through a directory symlink that points outside', async () => {
    const error = await expectRefusal(
      call(pack, 'read_file', { path: 'evil-dir/secret.txt' }),
      'symlink_escape',
    );
    expect(error.securityEvent?.resolved).toBe(path.join(evil, 'secret.txt'));
  });

  it('refuses to read a file symlink that points at /etc/passwd', async () => {
    await expectRefusal(call(pack, 'read_file', { path: 'passwd' }), 'symlink_escape');
  });

  it('refuses to write through a directory symlink that points outside, writing nothing', async () => {
    await expectRefusal(
      call(pack, 'write_file', { path: 'evil-dir/planted.txt', content: 'x' }),
      'symlink_escape',
    );
    expect(existsSync(path.join(evil, 'planted.txt'))).toBe(false);
  });

  it('refuses to write through a dangling symlink that points outside, creating nothing', async () => {
    await expectRefusal(call(pack, 'write_file', { path: 'dangling-out', content: 'x' }), 'symlink_escape');
    expect(existsSync(path.join(evil, 'not-yet-there.txt'))).toBe(false);
  });

  it('refuses to write through a dangling symlink even when it points inside', async () => {
    await expectRefusal(call(pack, 'write_file', { path: 'dangling-in', content: 'x' }), 'dangling_symlink');
    expect(existsSync(path.join(ws, 'missing-target.txt'))).toBe(false);
  });

  it('refuses a path with a NUL byte', async () => {
    await expectRefusal(call(pack, 'read_file', { path: 'src/lib.rs\0.png' }), 'nul_byte');
  });

  it('refuses an absurdly long path', async () => {
    await expectRefusal(call(pack, 'write_file', { path: 'a/'.repeat(3000), content: 'x' }), 'path_too_long');
  });

  it('refuses a file name longer than the file system allows', async () => {
    await expectRefusal(call(pack, 'read_file', { path: `${'n'.repeat(300)}.rs` }), 'path_too_long');
  });

  it.each([
    '.cargo/config.toml',
    '.cargo/config',
    'rust-toolchain.toml',
    'rust-toolchain',
    '.git/hooks/pre-commit',
    '.git/config',
    'crates/member/.cargo/config.toml',
  ])('refuses to write %s, a file the toolchain or git executes', async (target) => {
    const before = existsSync(path.join(ws, target))
      ? await readFile(path.join(ws, target), 'utf8')
      : undefined;
    await expectRefusal(
      call(pack, 'write_file', { path: target, content: '[build]\nrustc-wrapper = "/tmp/x"\n' }),
      'protected_file',
    );
    const after = existsSync(path.join(ws, target))
      ? await readFile(path.join(ws, target), 'utf8')
      : undefined;
    expect(after).toBe(before);
  });

  it('refuses to write a protected file through an innocent-looking symlink', async () => {
    await expectRefusal(
      call(pack, 'write_file', { path: 'cargo-config-alias', content: 'x' }),
      'protected_file',
    );
    expect(await readFile(path.join(ws, '.cargo/config.toml'), 'utf8')).toBe('[term]\nverbose = false\n');
  });

  it('refuses to edit the workspace cargo config', async () => {
    await expectRefusal(
      call(pack, 'edit_file', {
        path: '.cargo/config.toml',
        old_text: 'verbose = false',
        new_text: 'verbose = true',
      }),
      'protected_file',
    );
  });

  it('does not read .git/config, where credentials can hide, and never shows them', async () => {
    const error = await expectRefusal(call(pack, 'read_file', { path: '.git/config' }), 'protected_file');
    expect(error.message).not.toContain('token');
  });

  it('reports a binary file as such instead of returning its bytes', async () => {
    expect(await call(pack, 'read_file', { path: 'image.png' })).toMatch(/binary file \(8 bytes\)/);
  });

  it('refuses to read a file over the size limit and says what to do', async () => {
    expect(await expectToolError(call(pack, 'read_file', { path: 'huge.txt' }))).toMatch(/search/);
  });

  it('refuses to write content over the size limit', async () => {
    expect(
      await expectToolError(
        call(pack, 'write_file', { path: 'big.txt', content: 'x'.repeat(2 * 1024 * 1024) }),
      ),
    ).toMatch(/at most/);
    expect(existsSync(path.join(ws, 'big.txt'))).toBe(false);
  });

  it('refuses an edit whose old_text matches zero or several times', async () => {
    expect(
      await expectToolError(call(pack, 'edit_file', { path: 'dup.txt', old_text: 'absent', new_text: 'x' })),
    ).toMatch(/not found/);
    expect(
      await expectToolError(call(pack, 'edit_file', { path: 'dup.txt', old_text: 'same', new_text: 'x' })),
    ).toMatch(/2 times/);
  });

  it('refuses to list or search outside the workspace', async () => {
    await expectRefusal(call(pack, 'list_files', { path: '..' }), 'outside_workspace');
    await expectRefusal(call(pack, 'search', { pattern: 'root', path: '/etc' }), 'outside_workspace');
  });

  it('lists links without following them and searches without leaking what they point at', async () => {
    const listing = await call(pack, 'list_files', { path: '.' });
    expect(listing).toContain('evil-dir -> ');
    expect(listing).not.toContain('secret.txt');
    expect(await call(pack, 'search', { pattern: 'outside-secret' })).not.toContain(SECRET);
  });

  it('searches a pattern with nested quantifiers as literal text instead of hanging', async () => {
    await writeFile(path.join(ws, 'redos.txt'), `${'a'.repeat(40)}!\n`);
    const started = Date.now();
    expect(await call(pack, 'search', { pattern: '(a+)+$', path: 'redos.txt' })).toMatch(/No match/);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});

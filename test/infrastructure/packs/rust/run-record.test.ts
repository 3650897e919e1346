import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SpecialistPack } from '../../../../src/application/ports.ts';
import { probeBwrap } from '../../../../src/infrastructure/sandbox/bwrap.ts';
import { call, expectRefusal, rustPack, tempDir } from './helpers.ts';

const RUNLOG = '{"v":1,"kind":"run_start"}\n';
const CONFIG = 'version: 1\napi: { token: secret-token }\nspecialists: {}\n';

let ws: string;
let cleanup: () => Promise<void>;
let pack: SpecialistPack;

beforeAll(async () => {
  const temp = await tempDir('fabric-record-');
  cleanup = temp.cleanup;
  // The default layout: the workspace is the working directory, with ./runs and ./fabric.yaml in it.
  ws = path.join(temp.dir, 'my ws ünïcode');
  await mkdir(path.join(ws, 'runs', 'r1'), { recursive: true });
  await mkdir(path.join(ws, '.git'), { recursive: true });
  await mkdir(path.join(ws, 'src'));
  await writeFile(path.join(ws, 'runs', 'r1', 'runlog.jsonl'), RUNLOG);
  await writeFile(path.join(ws, 'fabric.yaml'), CONFIG);
  await writeFile(path.join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
  await writeFile(path.join(ws, 'src', 'lib.rs'), 'pub fn run_start() {}\n');
  await symlink('runs', path.join(ws, 'logs'));
  pack = await rustPack(
    ws,
    { allowed_commands: ['sh', 'cargo check'] },
    {},
    {
      searxngUrl: undefined,
      runsDir: path.join(ws, 'runs'),
      configFile: path.join(ws, 'fabric.yaml'),
    },
  );
});
afterAll(() => cleanup());

async function unchanged(): Promise<void> {
  expect(await readFile(path.join(ws, 'runs', 'r1', 'runlog.jsonl'), 'utf8')).toBe(RUNLOG);
  expect(await readFile(path.join(ws, 'fabric.yaml'), 'utf8')).toBe(CONFIG);
  expect(await readFile(path.join(ws, '.git', 'HEAD'), 'utf8')).toBe('ref: refs/heads/main\n');
}

describe('the run record inside the workspace', () => {
  const runlogPaths = [
    'runs/r1/runlog.jsonl',
    './runs/r1/runlog.jsonl',
    'src/../runs/r1/runlog.jsonl',
    'logs/r1/runlog.jsonl',
  ];

  it.each(runlogPaths)('refuses write_file, edit_file and read_file on the runlog as %s', async (target) => {
    await expectRefusal(call(pack, 'write_file', { path: target, content: 'forged\n' }), 'run_record');
    await expectRefusal(
      call(pack, 'edit_file', { path: target, old_text: 'run_start', new_text: 'run_end' }),
      'run_record',
    );
    await expectRefusal(call(pack, 'read_file', { path: target }), 'run_record');
    await unchanged();
  });

  it('refuses a new file in the runs directory, and listing or searching inside it', async () => {
    const error = await expectRefusal(
      call(pack, 'write_file', { path: 'runs/r2/runlog.jsonl', content: '{}' }),
      'run_record',
    );
    expect(error.message).toMatch(/runs directory.*No tool may read or change it/);
    await expectRefusal(call(pack, 'list_files', { path: 'runs' }), 'run_record');
    await expectRefusal(call(pack, 'search', { pattern: 'run_start', path: 'runs' }), 'run_record');
  });

  it('lists the runs directory as closed and leaves it out of a search of the workspace', async () => {
    const listing = await call(pack, 'list_files', {});
    expect(listing).toMatch(/^runs\/ \(the fabric's run record, not open to tools\)$/m);
    expect(listing).not.toContain('runlog.jsonl');
    const found = await call(pack, 'search', { pattern: 'run_start' });
    expect(found).toBe('src/lib.rs:1:pub fn run_start() {}');
  });

  it('refuses the config file in use, for reading too (it can hold the API token)', async () => {
    await expectRefusal(call(pack, 'read_file', { path: 'fabric.yaml' }), 'protected_file');
    await expectRefusal(
      call(pack, 'write_file', { path: 'fabric.yaml', content: 'specialists: {}' }),
      'protected_file',
    );
    await expectRefusal(
      call(pack, 'edit_file', { path: 'fabric.yaml', old_text: 'secret-token', new_text: 'x' }),
      'protected_file',
    );
    await unchanged();
  });

  it('refuses .git for every file tool', async () => {
    await expectRefusal(call(pack, 'read_file', { path: '.git/HEAD' }), 'protected_file');
    await expectRefusal(call(pack, 'write_file', { path: '.git/HEAD', content: 'x' }), 'protected_file');
    await expectRefusal(
      call(pack, 'edit_file', { path: '.git/HEAD', old_text: 'main', new_text: 'evil' }),
      'protected_file',
    );
    await expectRefusal(call(pack, 'list_files', { path: '.git' }), 'protected_file');
    await expectRefusal(call(pack, 'search', { pattern: 'ref', path: '.git' }), 'protected_file');
    await unchanged();
  });

  it('mounts the runs directory, the config file and .git read-only for sandboxed commands', async (test) => {
    const probe = await probeBwrap();
    if (!probe.ok) return test.skip(`bubblewrap is not usable here: ${probe.reason}`);
    const output = await call(pack, 'shell', {
      command:
        'sh -c "echo forged >> runs/r1/runlog.jsonl; echo x > runs/new; echo y >> fabric.yaml; echo z > .git/HEAD; echo done"',
    });
    expect(output).toMatch(/Read-only file system/);
    expect(output).toContain('done');
    await unchanged();
    expect(await readFile(path.join(ws, 'runs', 'new'), 'utf8').catch(() => 'absent')).toBe('absent');
  });

  it('still lets the model write the project files', async () => {
    await call(pack, 'write_file', { path: 'src/new.rs', content: 'pub fn f() {}\n' });
    expect(await readFile(path.join(ws, 'src', 'new.rs'), 'utf8')).toBe('pub fn f() {}\n');
  });
});

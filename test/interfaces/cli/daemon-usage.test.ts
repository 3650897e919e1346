import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { daemonRepo, git } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const rust = (allowed: string[]) => ({
  specialists: { rust: { builder: 'builtin:rust', sandbox: { allowed_commands: allowed } } },
});

describe('fabric daemon: bad input is said clearly and the repository is left as it was', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
  });

  async function daemon(
    args: string[],
    extra: Record<string, unknown> = rust(['cargo build', 'cargo test']),
  ) {
    sandbox = await makeSandbox(extra);
    return runFabricInProcess([...args, '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
  }

  it('explains itself with --help', async () => {
    const out = await runFabricInProcess(['daemon', '--help'], { env: {}, cwd: '/' });
    expect(out.exitCode).toBe(0);
    expect(out.stdout).toContain('fabric daemon status [--repo DIR] [--json]');
    expect(out.stdout).toContain('--max-attempts N');
    expect(out.stdout).toContain('OPEN_SPEC_DAEMON_INTERVAL');
  });

  it('refuses a directory that is not a git repository', async () => {
    const dir = await tempDir('not-a-repo-');
    const out = await daemon(['daemon', '--repo', dir, '--once']);
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toMatch(/is not a git work tree.*git init/);
  });

  it('refuses a detached HEAD', async () => {
    const repo = await daemonRepo({ 'openspec/changes/a/tasks.md': '- [ ] 1.1 x\n' });
    await git(repo, 'checkout', '-q', '--detach');
    const out = await daemon(['daemon', '--repo', repo, '--once']);
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toContain('HEAD is detached');
  });

  it('refuses a validation command outside the allowlist before touching anything', async () => {
    const repo = await daemonRepo({ 'openspec/changes/a/tasks.md': '- [ ] 1.1 x\n' });
    const out = await daemon(['daemon', '--repo', repo, '--once'], {
      ...rust(['cargo build']),
      daemon: { validate: ['cargo build', 'cargo test'] },
    });
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toMatch(/validation command "cargo test" is refused by the specialist's sandbox/);
  });

  it('names a change it cannot read (no checklist, an empty task) and still finishes the pass', async () => {
    const repo = await daemonRepo({
      'openspec/changes/empty/tasks.md': '# Tasks\n\nNothing here yet.\n',
      'openspec/changes/blank/tasks.md': '## 1. A\n- [ ] 1.1\n',
    });
    const head = await git(repo, 'rev-parse', 'HEAD');
    const out = await daemon(['daemon', '--repo', repo, '--once', '--json']);
    expect(out.exitCode).toBe(0);
    expect(out.stderr).toMatch(
      /change blank cannot be read: openspec\/changes\/blank\/tasks\.md:2: task 1\.1 has no text/,
    );
    expect(out.stderr).toMatch(/change empty cannot be read: .*no tasks found/);
    expect(await git(repo, 'rev-parse', 'HEAD')).toBe(head);
    const status = await runFabricInProcess(
      ['daemon', 'status', '--repo', repo, '--config', sandbox!.configPath, '--json'],
      {
        env: testEnv(sandbox!, 'http://127.0.0.1:9'),
        cwd: sandbox!.dir,
      },
    );
    const body = JSON.parse(status.stdout) as { changes: { id: string; error?: string }[] };
    expect(body.changes.map((c) => [c.id, typeof c.error])).toEqual([
      ['blank', 'string'],
      ['empty', 'string'],
    ]);
  });

  it('refuses a second daemon on the same repository', async () => {
    const repo = await daemonRepo({ 'openspec/changes/a/tasks.md': '- [x] 1.1 x\n' });
    await writeFile(
      join(repo, '.git', 'fabric-daemon.lock'),
      JSON.stringify({ pid: process.pid, host: (await import('node:os')).hostname() }),
    );
    const out = await daemon(['daemon', '--repo', repo, '--once']);
    expect(out.exitCode).toBe(2);
    expect(out.stderr).toMatch(/Another daemon \(pid \d+ .*one daemon per repository/);
  });
});

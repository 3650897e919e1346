import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CommandSandbox,
  type CommandSandboxOptions,
} from '../../../src/infrastructure/sandbox/command-sandbox.ts';
import { probeBwrap } from '../../../src/infrastructure/sandbox/bwrap.ts';
import { expectRefusal, processesMatching, tempDir, waitForNoProcess } from '../packs/rust/helpers.ts';

const SECRET = `env-secret-${Math.random().toString(36).slice(2)}`;
const FILE_SECRET = `file-secret-${Math.random().toString(36).slice(2)}`;
let base: string;
let ws: string;
let outside: string;
let cleanup: () => Promise<void>;

function sandbox(overrides: Partial<CommandSandboxOptions> = {}): CommandSandbox {
  return new CommandSandbox({
    root: ws,
    // Test-only: a shell inside the sandbox plays the part of hostile build code.
    allowedCommands: ['sh', 'env', 'yes', 'ls', 'cat'],
    timeoutMs: 20_000,
    network: false,
    outputLimitBytes: 16 * 1024,
    whenNoOsSandbox: 'argv_policy_only',
    ...overrides,
  });
}

const signal = () => new AbortController().signal;

beforeAll(async () => {
  process.env.FABRIC_TEST_SECRET = SECRET;
  const temp = await tempDir('fabric-sbx-');
  cleanup = temp.cleanup;
  base = temp.dir;
  ws = path.join(base, 'ws');
  outside = path.join(base, 'outside');
  await mkdir(ws);
  await mkdir(outside);
  await writeFile(path.join(outside, 'secret.txt'), FILE_SECRET);
});

afterAll(async () => {
  delete process.env.FABRIC_TEST_SECRET;
  await cleanup();
});

describe('bubblewrap on this machine', () => {
  it('is installed and can create user, PID and network namespaces', async () => {
    const probe = await probeBwrap();
    expect(probe).toMatchObject({ ok: true });
  });
});

describe('a command inside the OS sandbox', () => {
  it('sees an environment built from scratch: no secret, a fixed PATH, a private HOME', async () => {
    const result = await sandbox().run('env', signal());
    expect(result.osSandbox).toBe('bwrap');
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stdout).not.toContain('FABRIC_TEST_SECRET');
    const pathLine = result.stdout.split('\n').find((line) => line.startsWith('PATH='))!;
    const entries = pathLine.slice('PATH='.length).split(':');
    expect(entries.every((entry) => entry.startsWith('/'))).toBe(true);
    expect(entries).not.toContain('');
    expect(entries).not.toContain('.');
    expect(result.stdout).toContain('HOME=/tmp/.fabric-home');
  });

  it('cannot read a secret file outside the workspace', async () => {
    const result = await sandbox().run(
      `sh -c "cat ${path.join(outside, 'secret.txt')} 2>&1; true"`,
      signal(),
    );
    expect(result.stdout).not.toContain(FILE_SECRET);
    expect(result.stdout).toMatch(/No such file/);
  });

  it('sees no home directory but the read-only toolchain', async () => {
    const result = await sandbox().run(
      'sh -c "ls -A /root /home 2>&1; cat /etc/shadow 2>&1; true"',
      signal(),
    );
    expect(result.stdout).not.toMatch(/\.ssh|\.bash_history|\.npmrc|\.gitconfig/);
    expect(result.stdout).toMatch(/shadow: No such file/);
  });

  it('cannot write outside the workspace, nor into the toolchain', async () => {
    const result = await sandbox().run(
      `sh -c "echo x > ${path.join(outside, 'pwned')} 2>&1; echo x > /usr/pwned 2>&1; touch inside.txt; true"`,
      signal(),
    );
    expect(existsSync(path.join(outside, 'pwned'))).toBe(false);
    expect(existsSync('/usr/pwned')).toBe(false);
    expect(existsSync(path.join(ws, 'inside.txt'))).toBe(true);
    expect(result.stdout + result.stderr).toMatch(/Read-only|No such file/);
  });

  it('runs with stdin closed, so a command waiting for input ends at once', async () => {
    const result = await sandbox().run('sh -c "read line; echo got:$line."', signal());
    expect(result.stdout).toContain('got:.');
    expect(result.durationMs).toBeLessThan(5000);
  });

  it('keeps the head and tail of a flood and kills the command', async () => {
    const result = await sandbox({ outputLimitBytes: 1000 }).run('yes fabric-flood-marker', signal());
    expect(result.end).toBe('flood');
    expect(result.stdout.length).toBeLessThan(1200);
    expect(result.stdout).toMatch(/bytes of output omitted/);
    expect(result.truncated).toBe(true);
    expect(await waitForNoProcess('fabric-flood-marker')).toEqual([]);
  });

  it('kills the whole tree on timeout, setsid escapees included', async () => {
    const result = await sandbox({ timeoutMs: 1500 }).run(
      'sh -c "setsid sleep 4242.1 & sleep 4242.2 & sleep 4242.3"',
      signal(),
    );
    expect(result.end).toBe('timeout');
    expect(await waitForNoProcess('sleep 4242')).toEqual([]);
  });

  it('kills what a command leaves behind when it exits normally', async () => {
    const result = await sandbox().run('sh -c "setsid sleep 4343.1 & sleep 4343.2 & echo done"', signal());
    expect(result.end).toBe('exited');
    expect(await waitForNoProcess('sleep 4343')).toEqual([]);
  });

  it('stops the command and its tree when the tool context is aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 500);
    const result = await sandbox().run('sh -c "setsid sleep 4444.1 & sleep 4444.2"', controller.signal);
    expect(result.end).toBe('cancelled');
    expect(result.durationMs).toBeLessThan(5000);
    expect(await waitForNoProcess('sleep 4444')).toEqual([]);
  });

  it('restores toolchain and git files a command plants in the workspace, and reports it', async () => {
    await mkdir(path.join(ws, '.git', 'hooks'), { recursive: true });
    await writeFile(path.join(ws, '.git', 'config'), '[core]\n');
    const error = await expectRefusal(
      sandbox().run(
        'sh -c "mkdir -p .cargo; echo [build] > .cargo/config.toml; echo x > rust-toolchain.toml; echo evil > .git/hooks/pre-commit; echo evil >> .git/config; true"',
        signal(),
      ),
      'protected_file_modified',
    );
    expect(error.securityEvent?.resolved).toEqual(expect.arrayContaining(['.cargo', 'rust-toolchain.toml']));
    expect(existsSync(path.join(ws, '.cargo'))).toBe(false);
    expect(existsSync(path.join(ws, 'rust-toolchain.toml'))).toBe(false);
    // Mounted read-only inside bubblewrap: the writes failed there in the first place.
    expect(existsSync(path.join(ws, '.git', 'hooks', 'pre-commit'))).toBe(false);
    expect(await readFile(path.join(ws, '.git', 'config'), 'utf8')).toBe('[core]\n');
  });
});

describe('without bubblewrap', () => {
  it('refuses every command when sandbox.when_no_os_sandbox is refuse, and says why', async () => {
    const error = await expectRefusal(
      sandbox({ bwrapPath: '/nonexistent/bwrap', whenNoOsSandbox: 'refuse' }).run('env', signal()),
      'no_os_sandbox',
    );
    expect(error.message).toMatch(/bubblewrap/);
  });

  it('says once that only the argv policy applies, and still builds the environment from scratch', async () => {
    const notices: string[] = [];
    const fallback = sandbox({
      bwrapPath: '/nonexistent/bwrap',
      onNotice: (message) => notices.push(message),
    });
    const first = await fallback.run('env', signal());
    const second = await fallback.run('env', signal());
    expect(first.osSandbox).toBe('none');
    expect(first.notice).toMatch(/NOT contained/);
    expect(second.notice).toBeUndefined();
    expect(notices).toHaveLength(1);
    expect(first.stdout).not.toContain(SECRET);
  });

  it('still kills the process group on timeout', async () => {
    const result = await sandbox({ bwrapPath: '/nonexistent/bwrap', timeoutMs: 1000 }).run(
      'sh -c "sleep 4545.1 & sleep 4545.2"',
      signal(),
    );
    expect(result.end).toBe('timeout');
    expect(await waitForNoProcess('sleep 4545')).toEqual([]);
  });
});

afterAll(() => {
  // Nothing any test started may survive it.
  expect(processesMatching('sleep 4[2-5]4')).toEqual([]);
});

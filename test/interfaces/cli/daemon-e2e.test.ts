import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  calls,
  daemonRepo,
  finish,
  firstUserMessage,
  git,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODELS = [{ id: 'qwen/qwen3-coder-30b', toolUse: true }];

const ALPHA_TASKS =
  '# Tasks\r\n\r\n## 1. Shapes\r\n- [ ] 1.1 Add perimeter\r\n  - a module perimeter with a test\r\n- [ ] 1.2 Add double\r\n';
const BETA_TASKS = '## 1. Triple\n- [ ] 1.1 Add triple\n- [ ] 1.2 Use triple\n';
const GAMMA_TASKS = '## 1. Docs\n* [ ] 1.1 Write notes\n';

const config = {
  specialists: {
    rust: {
      builder: 'builtin:rust',
      max_steps: 8,
      sandbox: { allowed_commands: ['cargo check', 'cargo build', 'cargo test'], timeout_s: 120 },
    },
  },
};

function addModule(name: string) {
  return {
    name: 'edit_file',
    arguments: { path: 'src/lib.rs', old_text: 'pub fn area', new_text: `pub mod ${name};\n\npub fn area` },
  };
}

function writeModule(name: string, body: string, test: string) {
  return { name: 'write_file', arguments: { path: `src/${name}.rs`, content: rustModule(name, body, test) } };
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('fabric daemon on a real git repository with a real crate', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('commits tasks done first time and after test feedback, blocks a task after N attempts while another change goes on, and reports it all', async () => {
    const repo = await daemonRepo({
      'openspec/changes/alpha/proposal.md': '# Alpha\nShapes need a perimeter and a double.\n',
      'openspec/changes/alpha/tasks.md': ALPHA_TASKS,
      'openspec/changes/beta/proposal.md': '# Beta\n',
      'openspec/changes/beta/tasks.md': BETA_TASKS,
      'openspec/changes/gamma/proposal.md': '# Gamma\n',
      'openspec/changes/gamma/tasks.md': GAMMA_TASKS,
    });
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [
            calls(addModule('perimeter'), {
              name: 'write_file',
              arguments: {
                path: 'src/perimeter.rs',
                content: 'pub fn perimeter(w: u32, h: u32) -> u32 {\n    2 * (w + h)\n}\n',
              },
            }),
            finish('Added perimeter.'),
          ],
        },
        {
          match: taskKey('alpha', '1.2'),
          script: [
            // Compiles, but its test fails: the failure is fed back to the second attempt.
            calls(addModule('double'), writeModule('double', 'x + 1', 'assert_eq!(super::double(4), 8);')),
            finish('Added double.'),
            calls(writeModule('double', 'x * 2', 'assert_eq!(super::double(4), 8);')),
            finish('Fixed double.'),
          ],
        },
        {
          match: taskKey('beta', '1.1'),
          script: [
            calls(addModule('triple'), writeModule('triple', 'x', 'assert_eq!(super::triple(2), 6);')),
            finish('Added triple.'),
            calls(writeModule('triple', 'x + x', 'assert_eq!(super::triple(2), 6);')),
            finish('Changed triple.'),
          ],
        },
        {
          match: taskKey('gamma', '1.1'),
          script: [
            calls({ name: 'write_file', arguments: { path: 'NOTES.md', content: '# Notes\n' } }),
            finish('Wrote notes.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox(config);
    const env = testEnv(sandbox, server.url);
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '2', '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    expect(run.stderr).toContain('▶ alpha 1.1 Add perimeter — attempt 1');
    expect(run.exitCode, run.stderr).toBe(1); // a task is blocked
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; task?: { change: string; id: string } });
    expect(events.map((e) => e.event)).toContain('task_blocked');

    // One commit per done task, in document order, each naming its task and run.
    const log = (
      await git(
        repo,
        'log',
        '--format=%s%x09%(trailers:key=Fabric-Run,valueonly,separator=)',
        `${head0}..HEAD`,
      )
    )
      .split('\n')
      .reverse();
    expect(log.map((line) => line.split('\t')[0])).toEqual([
      'alpha 1.1: Add perimeter',
      'alpha 1.2: Add double',
      'gamma 1.1: Write notes',
    ]);
    for (const line of log) expect(line.split('\t')[1]).toMatch(/^\d{8}T\d{6}-[0-9a-f]+|^[\w-]+$/);
    expect(await git(repo, 'status', '--porcelain')).toBe('');

    // tasks.md: byte-identical but for the ticked boxes (CRLF kept); beta's untouched.
    expect(await readFile(join(repo, 'openspec/changes/alpha/tasks.md'), 'utf8')).toBe(
      ALPHA_TASKS.replace('- [ ] 1.1', '- [x] 1.1').replace('- [ ] 1.2', '- [x] 1.2'),
    );
    expect(await readFile(join(repo, 'openspec/changes/beta/tasks.md'), 'utf8')).toBe(BETA_TASKS);
    expect(await readFile(join(repo, 'openspec/changes/gamma/tasks.md'), 'utf8')).toBe(
      GAMMA_TASKS.replace('* [ ]', '* [x]'),
    );
    // The blocked task's work is gone: the tree is at the last commit.
    await expect(readFile(join(repo, 'src/triple.rs'))).rejects.toThrow();
    expect(await readFile(join(repo, 'src/double.rs'), 'utf8')).toContain('x * 2');

    // The second attempt of alpha 1.2 was told why the first was refused.
    const alpha12 = server
      .chatRequests()
      .filter((r) => firstUserMessage(r).includes(taskKey('alpha', '1.2')));
    const second = alpha12.map(firstUserMessage).find((text) => text.includes('attempt 2 of 2'));
    expect(second).toContain('double_works');
    expect(second).toContain('$ cargo test');
    // beta 1.2 waited for the blocked 1.1: never started.
    expect(server.chatRequests().some((r) => firstUserMessage(r).includes(taskKey('beta', '1.2')))).toBe(
      false,
    );
    // The commit's trailers are the run that did the work and the model that wrote it.
    const done = events.filter((e) => e.event === 'task_done') as unknown as {
      task: { change: string; id: string; run_ids: string[]; commit: string };
    }[];
    for (const event of done) {
      const body = await git(repo, 'log', '-1', '--format=%B', event.task.commit);
      expect(body).toContain(
        `Fabric-Run: ${event.task.run_ids.at(-1)}\nFabric-Model: qwen/qwen3-coder-30b\n`,
      );
      expect(
        (
          await git(repo, 'log', '-1', '--format=%(trailers:key=Fabric-Model,valueonly)', event.task.commit)
        ).trim(),
      ).toBe('qwen/qwen3-coder-30b');
    }

    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(status.exitCode, status.stderr).toBe(0);
    const body = JSON.parse(status.stdout) as {
      changes: {
        id: string;
        done: number;
        pending: number;
        blocked: number;
        tasks: { id: string; status: string; attempts: number; run_ids: string[]; commit: string | null }[];
      }[];
      stats: {
        attempts: number;
        succeeded: number;
        first_attempt_success_rate: number;
        success_rate: number;
      };
      backend: { state: string; failures: number; backoff_s: number; last_ok: string | null };
    };
    expect(body.changes.map(({ id, done, pending, blocked }) => ({ id, done, pending, blocked }))).toEqual([
      { id: 'alpha', done: 2, pending: 0, blocked: 0 },
      { id: 'beta', done: 0, pending: 1, blocked: 1 },
      { id: 'gamma', done: 1, pending: 0, blocked: 0 },
    ]);
    const alpha = body.changes[0]!.tasks;
    expect(alpha.map((t) => [t.id, t.status, t.attempts])).toEqual([
      ['1.1', 'done', 1],
      ['1.2', 'done', 2],
    ]);
    expect(alpha[1]!.run_ids).toHaveLength(2);
    expect(alpha[1]!.commit).toBe(done.find((e) => e.task.id === '1.2')?.task.commit);
    expect(body.changes[1]!.tasks[0]).toMatchObject({
      id: '1.1',
      status: 'blocked',
      attempts: 2,
      commit: null,
    });
    expect(body.stats).toMatchObject({
      attempts: 6,
      succeeded: 3,
      success_rate: 0.5,
      first_attempt_success_rate: 0.5,
    });
    expect(body.backend).toMatchObject({ state: 'up', failures: 0, backoff_s: 0 });

    const human = await spawnFabric(['daemon', 'status', '--repo', repo, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(human.stdout).toContain('beta: 0 done, 1 pending, 1 blocked');
    expect(human.stdout).toContain('[!] 1.1 Add triple');
  }, 240_000);

  it('records clippy warnings before and after a task where the allowlist allows cargo clippy', async () => {
    const repo = await daemonRepo({ 'openspec/changes/lint/tasks.md': '- [ ] 1.1 Add half\n' });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('lint', '1.1'),
          script: [
            // Builds and passes its test, with one needless `return` for clippy to warn about.
            calls(addModule('half'), writeModule('half', 'return x / 2;', 'assert_eq!(super::half(4), 2);')),
            finish('Added half.'),
          ],
        },
      ],
    });
    const allowed = [...config.specialists.rust.sandbox.allowed_commands, 'cargo clippy'];
    sandbox = await makeSandbox({
      specialists: {
        rust: { ...config.specialists.rust, sandbox: { allowed_commands: allowed, timeout_s: 120 } },
      },
    });
    const env = testEnv(sandbox, server.url);
    const run = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    const body = JSON.parse(status.stdout) as { stats: { tasks: Record<string, unknown>[] } };
    expect(body.stats.tasks).toEqual([
      expect.objectContaining({
        id: '1.1',
        status: 'done',
        clippy_before: 0,
        clippy_after: 1,
        clippy_note: null,
      }),
    ]);
    const human = await spawnFabric(['daemon', 'status', '--repo', repo, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(human.stdout).toContain('clippy warnings 0 → 1');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  }, 120_000);

  it('refuses a dirty tree and leaves the edit alone', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Something\n' });
    await writeFile(join(repo, 'src/lib.rs'), '// my unsaved idea\n');
    sandbox = await makeSandbox(config);
    const run = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toMatch(/uncommitted changes \(1 file\).*never discards work it did not make/);
    expect(await readFile(join(repo, 'src/lib.rs'), 'utf8')).toBe('// my unsaved idea\n');
  });

  it('says how many files are dirty when there are more than it lists', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Something\n' });
    await mkdir(join(repo, 'scratch'));
    for (let i = 0; i < 13; i++) await writeFile(join(repo, 'scratch', `f${i}.txt`), 'x\n');
    sandbox = await makeSandbox(config);
    const run = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toContain('has uncommitted changes (13 files)');
    expect(run.stderr.split('\n').filter((line) => line.startsWith('  ?? '))).toHaveLength(10);
    expect(run.stderr).toContain('  … and 3 more (git status lists them all)');
  });

  it('waits for a backend that is down at the start without spending an attempt, then does the task', async () => {
    const repo = await daemonRepo({ 'openspec/changes/docs/tasks.md': '- [ ] 1.1 Write notes\n' });
    const port = await freePort();
    sandbox = await makeSandbox(config);
    const child = spawnFabric(
      ['daemon', '--repo', repo, '--once', '--interval', '1', '--config', sandbox.configPath, '--json'],
      { env: testEnv(sandbox, `http://127.0.0.1:${port}`), cwd: sandbox.dir },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    await waitFor(() => stderr.includes('no model reachable'), 'the daemon to say the backend is down');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      port,
      byTask: [
        {
          match: taskKey('docs', '1.1'),
          script: [
            calls({ name: 'write_file', arguments: { path: 'NOTES.md', content: '# Notes\n' } }),
            finish('Notes.'),
          ],
        },
      ],
    });
    const run = await child;
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain('no attempt spent');
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; task?: { attempts: number } });
    expect(events.some((e) => e.event === 'backend_down')).toBe(true);
    expect(events.find((e) => e.event === 'task_done')?.task?.attempts).toBe(1);
    expect(await git(repo, 'log', '-1', '--format=%s')).toBe('docs 1.1: Write notes');
  }, 120_000);

  it('on SIGTERM mid-run cancels the run, restores the tree to the last commit and exits', async () => {
    const repo = await daemonRepo({ 'openspec/changes/slow/tasks.md': '- [ ] 1.1 Take long\n' });
    const head = await git(repo, 'rev-parse', 'HEAD');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('slow', '1.1'),
          script: [
            calls(
              { name: 'write_file', arguments: { path: 'src/half.rs', content: 'pub fn half() {}\n' } },
              {
                name: 'edit_file',
                arguments: {
                  path: 'src/lib.rs',
                  old_text: 'pub fn area',
                  new_text: 'pub mod half;\n\npub fn area',
                },
              },
            ),
            { hang: true },
          ],
        },
      ],
    });
    sandbox = await makeSandbox(config);
    const child = spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    await waitFor(() => server!.chatRequests().length >= 2, 'the run to be half-way');
    child.kill('SIGTERM');
    const run = await child;
    expect(run.exitCode, run.stderr).toBe(130);
    expect(run.stderr).toContain('cancelled; tree restored to the last commit');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
    expect(await git(repo, 'rev-parse', 'HEAD')).toBe(head);
    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      {
        env: testEnv(sandbox, server.url),
        cwd: sandbox.dir,
      },
    );
    const body = JSON.parse(status.stdout) as {
      changes: { tasks: { status: string }[] }[];
      daemon: { running: boolean };
    };
    expect(body.changes[0]!.tasks[0]!.status).toBe('pending');
    expect(body.daemon.running).toBe(false);
  }, 120_000);
});

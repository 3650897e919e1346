import { access, readdir, readFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import process from 'node:process';
import { afterEach, describe, expect, it } from 'vitest';
import { calls, daemonRepo, finish, git, taskKey } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, ROOT, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/** OpenSpec's CLI on the PATH (.ci/run installs it); without it the daemon never calls it. */
const OPENSPEC = await (async () => {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir === '') continue;
    try {
      await access(join(dir, 'openspec'));
      return true;
    } catch {}
  }
  return false;
})();

const CHANGE = 'examples/compositor/openspec/changes/add-region-queries';

describe.skipIf(!OPENSPEC)('fabric daemon with openspec on the PATH', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('validates a finished change with openspec validate --strict and archives it in a commit of its own', async () => {
    const change = 'openspec/changes/add-region-queries';
    const repo = await daemonRepo({
      [`${change}/proposal.md`]: await readFile(join(ROOT, CHANGE, 'proposal.md'), 'utf8'),
      [`${change}/specs/region/spec.md`]: await readFile(join(ROOT, CHANGE, 'specs/region/spec.md'), 'utf8'),
      [`${change}/tasks.md`]: '## 1. Region queries\n- [ ] 1.1 Write the notes\n  - [ ] 1.1.1 Start them\n',
    });
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    const write = (id: string, text: string) => ({
      match: taskKey('add-region-queries', id),
      script: [
        calls({ name: 'write_file', arguments: { path: 'NOTES.md', content: text } }),
        finish('Notes.'),
      ],
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [write('1.1.1', '# Notes\n'), write('1.1', '# Notes\n\nMore.\n')],
    });
    sandbox = await makeSandbox({
      specialists: {
        rust: {
          builder: 'builtin:rust',
          max_steps: 8,
          sandbox: { allowed_commands: ['cargo build', 'cargo test'], timeout_s: 120 },
        },
      },
    });
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--archive', '--config', sandbox.configPath, '--json'],
      { env: { ...testEnv(sandbox, server.url), PATH: process.env.PATH ?? '' }, cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain('✓ add-region-queries: every task done; openspec validate --strict passes');
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; ok?: boolean; commit?: string });
    expect(events.find((e) => e.event === 'change_validated')).toMatchObject({ ok: true });
    const archived = events.find((e) => e.event === 'change_archived');
    expect(archived).toMatchObject({ ok: true });
    expect((await git(repo, 'log', '--format=%s', `${head0}..HEAD`)).split('\n').reverse()).toEqual([
      'add-region-queries 1.1.1: Start them',
      'add-region-queries 1.1: Write the notes',
      'add-region-queries: archive the change',
    ]);
    expect(await git(repo, 'rev-parse', 'HEAD')).toBe(archived?.commit);
    const archive = await readdir(join(repo, 'openspec/changes/archive'));
    expect(archive).toEqual([expect.stringMatching(/^\d{4}-\d{2}-\d{2}-add-region-queries$/)]);
    expect(await readFile(join(repo, 'openspec/changes/archive', archive[0]!, 'tasks.md'), 'utf8')).toBe(
      '## 1. Region queries\n- [x] 1.1 Write the notes\n  - [x] 1.1.1 Start them\n',
    );
    expect(await readFile(join(repo, 'openspec/specs/region/spec.md'), 'utf8')).toContain(
      'Point containment',
    );
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  }, 120_000);
});

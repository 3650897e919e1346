import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { calls, DAEMON_CONFIG, daemonRepo, finish, git, taskKey } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODELS = [{ id: 'qwen/qwen3-coder-30b', toolUse: true }];
const config = DAEMON_CONFIG;

// Unnumbered sections, an ordered list, a `[~]` mark, a nested box and an empty done box: forms
// OpenSpec counts (5 tasks, 1 done) that the daemon once refused or skipped.
const TASKS =
  '# Tasks\n\n## Backend\n- [ ] Add the endpoint\n- [x]\n\n## Frontend\n1. [ ] Add the button\n' +
  '- [~] 2.1 Style it\n  - [ ] 2.1.1 Pick the colour\n    - the colour of the button\n';

function note(file: string, content: string) {
  return calls({ name: 'write_file', arguments: { path: file, content } });
}

describe('fabric daemon on the tasks.md forms OpenSpec reads', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('does unnumbered, ordered and nested tasks, a sub-task before its parent, and ticks each on its mark', async () => {
    const repo = await daemonRepo({ 'openspec/changes/forms/tasks.md': TASKS });
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    const byTask = [
      ['s1#1', 'ENDPOINT.md'],
      ['s2#1', 'BUTTON.md'],
      ['2.1.1', 'COLOUR.md'],
      ['2.1', 'STYLE.md'],
    ].map(([id, file]) => ({
      match: taskKey('forms', id!),
      script: [note(file!, `# ${id}\n`), finish(`Did ${id}.`)],
    }));
    server = await startFakeLlmServer({ flavor: 'lm_studio', models: MODELS, byTask });
    sandbox = await makeSandbox(config);
    const env = testEnv(sandbox, server.url);
    const run = await spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(run.exitCode, run.stderr).toBe(0);
    const log = (await git(repo, 'log', '--format=%s', `${head0}..HEAD`)).split('\n').reverse();
    expect(log).toEqual([
      'forms s1#1: Add the endpoint',
      'forms s2#1: Add the button',
      'forms 2.1.1: Pick the colour',
      'forms 2.1: Style it',
    ]);
    expect(await readFile(join(repo, 'openspec/changes/forms/tasks.md'), 'utf8')).toBe(
      TASKS.replace('- [ ] Add', '- [x] Add')
        .replace('1. [ ]', '1. [x]')
        .replace('[~]', '[x]')
        .replace('- [ ] 2.1.1', '- [x] 2.1.1'),
    );
    // The sub-task's run carried its detail line and its parent; the parent's, its sub-task.
    const texts = server.chatRequests().map((r) => {
      const messages = (r.body as { messages: { role: string; content: string }[] }).messages;
      return messages.find((m) => m.role === 'user')?.content ?? '';
    });
    const child = texts.find((t) => t.includes(taskKey('forms', '2.1.1')));
    expect(child).toContain('the colour of the button');
    expect(child).toContain('It is a sub-task of task 2.1: Style it');
    expect(texts.find((t) => t.includes(taskKey('forms', '2.1')))).toContain('- [x] 2.1.1 Pick the colour');
    expect(await git(repo, 'status', '--porcelain')).toBe('');

    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    const body = JSON.parse(status.stdout) as { changes: { id: string; done: number; pending: number }[] };
    // OpenSpec's count of the file: 5 tasks, all done now.
    expect(body.changes).toMatchObject([{ id: 'forms', done: 5, pending: 0 }]);
  }, 120_000);
});

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DAEMON_CONFIG, daemonRepo, git } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';

describe('fabric daemon --once without a model server', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
  });

  it('gives up after daemon.backend_wait_s with exit 4, naming the servers asked and the fix, the task still pending', async () => {
    const tasks = '## 1. Work\n- [ ] 1.1 Add a function\n';
    const repo = await daemonRepo({ 'openspec/changes/a/tasks.md': tasks });
    sandbox = await makeSandbox({
      ...DAEMON_CONFIG,
      daemon: { validate: ['cargo build'], backend_wait_s: 0 },
    });
    const out = await spawnFabric(['daemon', '--once', '--repo', repo, '--config', sandbox.configPath], {
      // Nothing listens on port 9: LM Studio and Ollama both refuse.
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(out.exitCode, out.stderr).toBe(4);
    expect(out.stderr).toContain('No model server answered');
    expect(out.stderr).toMatch(/Asked:\n {2}- lm_studio http:\/\/127\.0\.0\.1:9: unreachable/);
    expect(out.stderr).toContain('lms server start');
    expect(out.stderr).toContain(
      'fabric daemon --once gave up after 0s without a model (daemon.backend_wait_s); a 1.1 is still pending.',
    );
    // Nothing was ticked or committed, and the tree is as it was.
    expect(await readFile(join(repo, 'openspec/changes/a/tasks.md'), 'utf8')).toBe(tasks);
    expect((await git(repo, 'log', '--oneline')).split('\n')).toHaveLength(1);
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  }, 120_000);
});

import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import {
  addModule,
  calls,
  DAEMON_CONFIG,
  daemonRepo,
  finish,
  git,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { listeningOn } from '../../support/served.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const MODELS = [{ id: MODEL, toolUse: true }];
const config = DAEMON_CONFIG;

function writeNotes(content: string) {
  return calls({ name: 'write_file', arguments: { path: 'NOTES.md', content } });
}

describe("the daemon's state", () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
    sandbox = undefined;
  });

  it('is left as it was by a refused start: the blocked task stays blocked and is not retried', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add broken\n' });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          // Its test fails: the only attempt fails and the task is blocked.
          script: [
            addModule('double', rustModule('double', 'x + 1', 'assert_eq!(super::double(4), 8);')),
            finish('Added double.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox(config);
    const env = testEnv(sandbox, server.url);
    const daemon = (...extra: string[]) =>
      spawnFabric(['daemon', '--repo', repo, '--once', '--config', sandbox!.configPath, ...extra], {
        env,
        cwd: sandbox!.dir,
      });
    const status = async () =>
      (
        await spawnFabric(['daemon', 'status', '--repo', repo, '--config', sandbox!.configPath, '--json'], {
          env,
          cwd: sandbox!.dir,
        })
      ).stdout;
    const first = await daemon('--max-attempts', '1');
    expect(first.exitCode, first.stderr).toBe(1);
    const before = await status();
    expect(JSON.parse(before)).toMatchObject({
      changes: [{ id: 'alpha', blocked: 1, tasks: [{ id: '1.1', status: 'blocked', attempts: 1 }] }],
    });

    await writeFile(join(repo, 'scratch.txt'), 'my notes\n');
    const refused = await daemon();
    expect(refused.exitCode).toBe(2);
    expect(refused.stderr).toMatch(/uncommitted changes/);
    expect(await status()).toBe(before);

    await git(repo, 'clean', '-q', '-f');
    const again = await daemon();
    expect(again.exitCode, again.stderr).toBe(1);
    // Still blocked from the first run: not tried again without --retry-blocked.
    expect(server.chatRequests()).toHaveLength(2);
    expect(JSON.parse(await status())).toMatchObject({
      changes: [{ tasks: [{ id: '1.1', status: 'blocked', attempts: 1 }] }],
    });
  }, 120_000);

  it("leaves git status empty after the README's walkthrough, its runs and database outside the work tree", async () => {
    const dir = await tempDir('walkthrough-');
    const done = (id: string) => ({
      match: taskKey('add-region-queries', id),
      script: [writeNotes(`# Notes\n\nTask ${id}.\n`), finish(`Did ${id}.`)],
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [done('1.1'), done('1.2')],
    });
    const env = {
      LM_STUDIO_URL: server.url,
      LM_STUDIO_MODEL: MODEL,
      OLLAMA_HOST: '127.0.0.1:9',
      NO_COLOR: '1',
      GIT_AUTHOR_NAME: 'Walk Through',
      GIT_AUTHOR_EMAIL: 'walk@example.com',
      GIT_COMMITTER_NAME: 'Walk Through',
      GIT_COMMITTER_EMAIL: 'walk@example.com',
    };
    const init = await spawnFabric(['init', '--example', 'compositor'], { env, cwd: dir, build: true });
    expect(init.exitCode, init.stderr).toBe(0);
    const repo = join(dir, 'compositor');
    await writeFile(join(repo, '.gitignore'), 'target/\n');
    const sh = (cmd: string, ...args: string[]) => execa(cmd, args, { cwd: repo, env });
    await sh('git', 'init', '-q', '-b', 'main');
    await sh('git', 'add', '-A');
    await sh('git', 'commit', '-qm', 'compositor core and its OpenSpec change');
    const run = await spawnFabric(['daemon', '--once'], { env, cwd: repo });
    expect(run.exitCode, run.stderr).toBe(0);
    // The model's reason names where the model came from: the environment, not a flag.
    expect(run.stderr).toContain(`model: LM_STUDIO_MODEL ${MODEL}, found on lm_studio`);
    expect(run.stderr).not.toContain('--model');
    const status = await spawnFabric(['daemon', 'status', '--json'], { env, cwd: repo });
    expect(JSON.parse(status.stdout)).toMatchObject({ changes: [{ id: 'add-region-queries', done: 2 }] });
    expect((await sh('git', 'status', '--porcelain', '--untracked-files=all')).stdout).toBe('');
    await expect(access(join(repo, 'runs'))).rejects.toThrow();
    // The state, the runs and the embedded database are in the git directory instead.
    const state = join(repo, '.git/fabric/runs/daemon');
    expect((await sh('ls', state)).stdout).toMatch(/^compositor-/);
    expect(await readFile(join(repo, 'NOTES.md'), 'utf8')).toContain('Task 1.2.');
    // The daemon's runs are found where a user looks: inside the repository, or with --repo.
    const listed = await spawnFabric(['runs', '--json'], { env, cwd: repo });
    expect(listed.exitCode, listed.stderr).toBe(0);
    const { runs } = JSON.parse(listed.stdout) as { runs: { run_id: string; status: string }[] };
    expect(runs.map((r) => r.status)).toEqual(['succeeded', 'succeeded']);
    const fromElsewhere = await spawnFabric(['runs', '--repo', repo], { env, cwd: dir });
    expect(fromElsewhere.stdout).toContain(runs[0]!.run_id);
    const replay = await spawnFabric(['replay', runs[0]!.run_id], { env, cwd: repo });
    expect(replay.exitCode, replay.stderr).toBe(0);
    expect(replay.stdout).toContain(`run ${runs[0]!.run_id} · ${join(repo, '.git/fabric/runs')}`);
    const shown = await spawnFabric(['runs', 'show', runs[1]!.run_id.slice(0, 22)], { env, cwd: repo });
    expect(shown.exitCode, shown.stderr).toBe(0);
    // fabric serve inside the repository shows the daemon's runs and writes nothing into the tree.
    const serve = spawnFabric(['serve', '--port', '0'], { env, cwd: repo });
    try {
      const { url } = await listeningOn(serve);
      const listing = await (await fetch(`${url}/v1/runs`)).text();
      expect(listing).toContain(runs[0]!.run_id);
      expect((await fetch(`${url}/runs/${runs[0]!.run_id}`)).status).toBe(200);
    } finally {
      serve.kill('SIGTERM');
      await serve;
    }
    expect((await sh('git', 'status', '--porcelain', '--untracked-files=all')).stdout).toBe('');
    // A second start is not refused for anything the first left.
    const second = await spawnFabric(['daemon', '--once'], { env, cwd: repo });
    expect(second.exitCode, second.stderr).toBe(0);
  }, 180_000);
});

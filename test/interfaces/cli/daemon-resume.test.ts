import { readFile, writeFile } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  DAEMON_CONFIG,
  addModule,
  daemonRepo,
  finish,
  git,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODELS = [{ id: 'qwen/qwen3-coder-30b', toolUse: true }];
// Waiting for another process to get somewhere, not a measure of speed.
const PATIENCE = { timeout: 120_000, interval: 100 };

interface Event {
  readonly event: string;
  readonly run_id?: string;
  readonly reason?: string;
  readonly task?: { readonly attempts: number; readonly run_ids: readonly string[]; readonly status: string };
}

describe('fabric daemon started again after a SIGKILL mid-attempt', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  /** A daemon killed while the fake holds its second turn, the first turn's edits in the tree. */
  async function killedDaemon() {
    const repo = await daemonRepo({
      'openspec/changes/alpha/proposal.md': '# Alpha\n',
      'openspec/changes/alpha/tasks.md': '## 1. Shapes\n- [ ] 1.1 Add double\n',
    });
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [
            addModule('double', rustModule('double', 'x * 2', 'assert_eq!(super::double(4), 8);')),
            // The daemon is killed while it waits for this turn.
            { hang: true },
            finish('Added double.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox(DAEMON_CONFIG);
    const env = testEnv(sandbox, server.url);
    const args = ['daemon', '--repo', repo, '--once', '--config', sandbox.configPath, '--json'];
    const first = spawnFabric(args, { env, cwd: sandbox.dir });
    cleanups.push(async () => {
      first.kill('SIGKILL');
      await first;
    });
    const fake = server;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(2), PATIENCE);
    first.kill('SIGKILL');
    expect((await first).signal).toBe('SIGKILL');
    // The attempt's edits are in the tree, uncommitted.
    const left = await git(repo, 'status', '--porcelain');
    expect(left).toContain('src/double.rs');

    return { repo, head0, args, env, fake };
  }

  it('resumes the interrupted attempt under its run id: no attempt spent, the tree kept, no recorded turn asked again', async () => {
    const { repo, head0, args, env, fake } = await killedDaemon();
    if (!sandbox) throw new Error('no sandbox');
    const second = await spawnFabric(args, { env, cwd: sandbox.dir });
    expect(second.exitCode, second.stderr).toBe(0);
    const events = second.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event);
    const resumed = events.find((e) => e.event === 'task_resumed');
    expect(resumed, second.stdout).toBeDefined();
    expect(events.map((e) => e.event)).not.toContain('task_start');
    expect(events.map((e) => e.event)).not.toContain('resume_refused');
    const done = events.find((e) => e.event === 'task_done');
    // One attempt, one run: the killed daemon's, gone on with.
    expect(done?.task).toMatchObject({ status: 'done', attempts: 1, run_ids: [resumed?.run_id] });

    // The killed turn is asked again with the same request; the recorded one is not asked again.
    const requests = fake.chatRequests();
    expect(requests).toHaveLength(3);
    const sent = (index: number) => {
      const body = requests[index]?.body as { messages: unknown; tools: unknown } | undefined;
      return JSON.stringify({ messages: body?.messages, tools: body?.tools });
    };
    expect(sent(2)).toBe(sent(1));

    // The work the attempt did before the kill is in the task's commit; the tree is clean.
    expect(await git(repo, 'rev-list', '--count', `${head0}..HEAD`)).toBe('1');
    expect(await git(repo, 'show', '--name-only', '--format=', 'HEAD')).toContain('src/double.rs');
    expect(await git(repo, 'status', '--porcelain')).toBe('');
  });

  it('says why a run it cannot resume is not resumed, and then does as before: refuses the tree the attempt left', async () => {
    const { repo, args, env } = await killedDaemon();
    if (!sandbox) throw new Error('no sandbox');
    // The config changed while the daemon was down: the run would not go on as it began.
    const configured = await readFile(sandbox.configPath, 'utf8');
    await writeFile(sandbox.configPath, configured.replace('max_steps: 8', 'max_steps: 9'));

    const second = await spawnFabric(args, { env, cwd: sandbox.dir });
    expect(second.exitCode, second.stderr).toBe(2);
    const refused = second.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Event)
      .find((e) => e.event === 'resume_refused');
    expect(refused?.reason).toContain('the config changed');
    expect(second.stderr).toContain('is not resumed');
    expect(second.stderr).toContain('has uncommitted changes');
    // Nothing discarded, nothing committed, no attempt spent.
    expect(await git(repo, 'status', '--porcelain')).toContain('src/double.rs');
    expect(refused?.task?.attempts).toBe(0);
  });
});

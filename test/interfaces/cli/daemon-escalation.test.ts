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
import { startFakeKeyed } from '../../support/fake-llm-compat.ts';

const SMALL = 'small/coder-7b';
const BIG = 'big/coder-30b';

function writeDouble(body: string) {
  return addModule('double', rustModule('double', body, 'assert_eq!(super::double(4), 8);'));
}

describe('fabric daemon with daemon.models', () => {
  let server: FakeLlmServer | undefined;
  let hosted: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await hosted?.stop();
    server = undefined;
    hosted = undefined;
    await sandbox?.cleanup();
  });

  it('escalates to a model on a keyed hosted backend named in the list (issue 27), the key sent only there', async () => {
    const KEY = 'sk-proj-DAEMONKEY-0a1b2c3d4e5f';
    const HOSTED = 'gpt-5-mini';
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add double\n' });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: SMALL, toolUse: true }],
      byTask: [{ match: taskKey('alpha', '1.1'), script: [writeDouble('x + 1'), finish('Added double.')] }],
    });
    hosted = await startFakeKeyed({
      key: KEY,
      modelIds: [HOSTED],
      script: [
        calls({
          name: 'edit_file',
          arguments: { path: 'src/double.rs', old_text: 'x + 1', new_text: 'x * 2' },
        }),
        finish('Fixed double.'),
      ],
    });
    sandbox = await makeSandbox({
      llm: {
        backends: [
          {
            kind: 'openai',
            url: `${hosted.url}/v1`,
            name: 'cloud',
            api_key_env: 'FAKE_CLOUD_KEY',
            models: [HOSTED],
          },
        ],
      },
      ...DAEMON_CONFIG,
      daemon: { models: [SMALL, HOSTED], validation_reruns: 0 },
    });
    const env = { ...testEnv(sandbox, server.url), FAKE_CLOUD_KEY: KEY };
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '1', '--config', sandbox.configPath],
      { env, cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain(`attempt 2 (${HOSTED})`);
    expect(await git(repo, 'log', '-1', '--format=%s')).toBe('alpha 1.1: Add double');
    expect(hosted.chatRequests().map((r) => (r.body as { model: string }).model)).toEqual([HOSTED, HOSTED]);
    expect(hosted.chatRequests().every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(JSON.stringify(server.requests)).not.toContain(KEY);
    expect(run.stdout + run.stderr).not.toContain(KEY);
  }, 120_000);

  it('escalates a task to the next model after the first spent its attempts, and reports each model', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add double\n' });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [
        { id: SMALL, toolUse: true },
        { id: BIG, toolUse: true },
      ],
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [
            // The small model's one attempt: its test fails. The big model's: right.
            writeDouble('x + 1'),
            finish('Added double.'),
            calls({
              name: 'edit_file',
              arguments: { path: 'src/double.rs', old_text: 'x + 1', new_text: 'x * 2' },
            }),
            finish('Fixed double.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox({
      ...DAEMON_CONFIG,
      daemon: { models: [SMALL, BIG], validation_reruns: 0 },
    });
    const env = testEnv(sandbox, server.url);
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '1', '--config', sandbox.configPath],
      { env, cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stderr).toContain(`▶ alpha 1.1 Add double — attempt 1 (${SMALL})`);
    expect(run.stderr).toContain(`▶ alpha 1.1 Add double — attempt 2 (${BIG})`);
    expect(await git(repo, 'log', '-1', '--format=%s')).toBe('alpha 1.1: Add double');
    // Each attempt's requests went to its model.
    const asked = server.chatRequests().map((r) => (r.body as { model: string }).model);
    expect(asked.slice(0, 2)).toEqual([SMALL, SMALL]);
    expect(asked.slice(2)).toEqual([BIG, BIG]);

    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    const body = JSON.parse(status.stdout) as { stats: { models: unknown[] } };
    expect(body.stats.models).toEqual([
      { model: SMALL, attempts: 1, succeeded: 0, success_rate: 0 },
      { model: BIG, attempts: 1, succeeded: 1, success_rate: 1 },
    ]);
    const human = await spawnFabric(['daemon', 'status', '--repo', repo, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(human.stdout).toContain(`model ${SMALL}: 1 attempt, 0 tasks done, success rate 0%`);
    expect(human.stdout).toContain(`model ${BIG}: 1 attempt, 1 task done, success rate 100%`);
  }, 120_000);

  it('blocks a task only when every model has spent its attempts', async () => {
    const repo = await daemonRepo({ 'openspec/changes/alpha/tasks.md': '- [ ] 1.1 Add double\n' });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [
        { id: SMALL, toolUse: true },
        { id: BIG, toolUse: true },
      ],
      byTask: [
        {
          match: taskKey('alpha', '1.1'),
          script: [writeDouble('x + 1'), finish('Added double.'), finish('Still done, I think.')],
        },
      ],
    });
    sandbox = await makeSandbox({
      ...DAEMON_CONFIG,
      daemon: { models: [SMALL, BIG], validation_reruns: 0 },
    });
    const env = testEnv(sandbox, server.url);
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '1', '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(1);
    const blocked = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { event: string; task?: { attempts: number } })
      .find((e) => e.event === 'task_blocked');
    expect(blocked?.task?.attempts).toBe(2);
    expect(run.stderr).toContain(`attempt 2 (${BIG})`);
  }, 120_000);
});

import { afterEach, describe, expect, it } from 'vitest';
import {
  calls,
  DAEMON_CONFIG,
  daemonRepo,
  finish,
  firstUserMessage,
  rustModule,
  taskKey,
} from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const config = DAEMON_CONFIG;

const wrongModule = {
  name: 'write_file',
  arguments: {
    path: 'src/double.rs',
    content: rustModule('double', 'x * 2 + 1', 'assert_eq!(super::double(4), 8);'),
  },
};
const addModule = {
  name: 'edit_file',
  arguments: { path: 'src/lib.rs', old_text: 'pub fn area', new_text: 'pub mod double;\n\npub fn area' },
};

describe('fabric daemon: a failed validation says what broke', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('prints each failing test with its panic location and assertion once per attempt, and feeds them to the model', async () => {
    const repo = await daemonRepo({
      'openspec/changes/shapes/proposal.md': '# Shapes\n',
      'openspec/changes/shapes/tasks.md': '## 1. Double\n- [ ] 1.1 Add double\n',
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      byTask: [
        {
          match: taskKey('shapes', '1.1'),
          // Both attempts leave a test whose assert_eq! fails with left 9, right 8; the second
          // starts from what the first left.
          script: [
            calls(addModule, wrongModule),
            finish('Added double.'),
            calls(wrongModule),
            finish('Added double again.'),
          ],
        },
      ],
    });
    sandbox = await makeSandbox(config);
    const run = await spawnFabric(
      ['daemon', '--repo', repo, '--once', '--max-attempts', '2', '--config', sandbox.configPath],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(run.exitCode, run.stderr).toBe(1); // blocked
    const failure = [
      '  ✗ validation failed: $ cargo test --no-fail-fast: exit code 101',
      '    double::tests::double_works panicked at src/double.rs:9:9:',
      '      assertion `left == right` failed',
      '        left: 9',
      '       right: 8',
      '    test result: FAILED. 1 passed; 1 failed;',
    ].join('\n');
    // Once per attempt, not again when the task is blocked.
    expect(run.stderr.split(failure)).toHaveLength(3);
    expect(run.stderr).toContain(
      'blocked after 2 attempts; tree restored to the last commit. Its last failure is above.',
    );

    // The second attempt was told the same: which test, where, and left and right.
    const second = server
      .chatRequests()
      .map(firstUserMessage)
      .find((text) => text.includes('attempt 2 of 2'));
    expect(second).toContain('double::tests::double_works panicked at src/double.rs:9:9:');
    expect(second).toContain(
      '\n  assertion `left == right` failed\n    left: 9\n   right: 8\ntest result: FAILED.',
    );
  }, 180_000);
});

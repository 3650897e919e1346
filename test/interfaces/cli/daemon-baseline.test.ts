import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BASE_LIB,
  addModule,
  calls,
  DAEMON_CONFIG,
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
const config = DAEMON_CONFIG;

/** The crate with a test that cannot pass in the sandbox (a GPU test in a compositor): red at HEAD. */
const RED_LIB = BASE_LIB.replace(
  '        assert_eq!(area(2, 3), 6);\n    }\n',
  '        assert_eq!(area(2, 3), 6);\n    }\n\n    #[test]\n    fn needs_a_gpu() {\n        panic!("no GPU in the sandbox");\n    }\n',
);

/** A test that fails the first time it runs in a checkout and passes after (a marker under target/). */
const FLAKY_MODULE = `pub fn flaky(x: u32) -> u32 {
    x
}

#[cfg(test)]
mod tests {
    #[test]
    fn flaky_once() {
        let marker = concat!(env!("CARGO_MANIFEST_DIR"), "/target/flaky-marker");
        if std::fs::metadata(marker).is_err() {
            std::fs::write(marker, "seen").unwrap();
            panic!("fails the first time");
        }
    }
}
`;

describe('fabric daemon against a baseline at HEAD', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
  });

  it('commits past a test red at HEAD, retries a regression, labels a flaky test and fails a tick-only run', async () => {
    const repo = await daemonRepo({
      'src/lib.rs': RED_LIB,
      // An integration test, green at HEAD: its binary runs after the unit tests' red one.
      'tests/area.rs': '#[test]\nfn area_is_product() {\n    assert_eq!(fixture::area(2, 3), 6);\n}\n',
      'openspec/changes/a-red/tasks.md': '- [ ] 1.1 Add double\n',
      'openspec/changes/b-regress/tasks.md': '- [ ] 1.1 Add triple\n',
      'openspec/changes/c-flaky/tasks.md': '- [ ] 1.1 Add flaky\n',
      'openspec/changes/d-tick/tasks.md': '## 1. Half\n- [ ] 1.1 Add half\n',
    });
    const head0 = await git(repo, 'rev-parse', 'HEAD');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: MODELS,
      byTask: [
        {
          match: taskKey('a-red', '1.1'),
          script: [
            addModule('double', rustModule('double', 'x * 2', 'assert_eq!(super::double(4), 8);')),
            finish('Added double.'),
          ],
        },
        {
          match: taskKey('b-regress', '1.1'),
          script: [
            // Breaks the integration test (green at HEAD, in the binary after the unit tests' red
            // one), then puts it back when told.
            addModule('triple', rustModule('triple', 'x * 3', 'assert_eq!(super::triple(2), 6);')),
            calls({
              name: 'edit_file',
              arguments: { path: 'tests/area.rs', old_text: '6);', new_text: '7);' },
            }),
            finish('Added triple.'),
            calls({
              name: 'edit_file',
              arguments: { path: 'tests/area.rs', old_text: '7);', new_text: '6);' },
            }),
            finish('Put the test back.'),
          ],
        },
        {
          match: taskKey('c-flaky', '1.1'),
          script: [addModule('flaky', FLAKY_MODULE), finish('Added flaky.')],
        },
        {
          match: taskKey('d-tick', '1.1'),
          script: [
            // Ticks its own box and does nothing else; told so, it does the work.
            calls({
              name: 'edit_file',
              arguments: {
                path: 'openspec/changes/d-tick/tasks.md',
                old_text: '- [ ] 1.1',
                new_text: '- [x] 1.1',
              },
            }),
            finish('Done.'),
            addModule('half', rustModule('half', 'x / 2', 'assert_eq!(super::half(4), 2);')),
            finish('Added half.'),
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
    expect(run.exitCode, run.stderr).toBe(0);
    const events = run.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown> & { event: string });
    const baselines = events.filter((e) => e.event === 'baseline');
    expect(baselines[0]).toMatchObject({ change: 'a-red', ok: false, failed_tests: ['tests::needs_a_gpu'] });
    expect(run.stderr).toContain(
      '1 test fail at HEAD (pre-existing, not blamed on a task): tests::needs_a_gpu',
    );

    expect((await git(repo, 'log', '--format=%s', `${head0}..HEAD`)).split('\n').reverse()).toEqual([
      'a-red 1.1: Add double',
      'b-regress 1.1: Add triple',
      'c-flaky 1.1: Add flaky',
      'd-tick 1.1: Add half',
    ]);
    expect(await readFile(join(repo, 'tests/area.rs'), 'utf8')).toContain('6);');
    expect(await readFile(join(repo, 'openspec/changes/d-tick/tasks.md'), 'utf8')).toBe(
      '## 1. Half\n- [x] 1.1 Add half\n',
    );

    // The regression's second attempt was told what it broke, and that the red test is not its.
    const texts = server.chatRequests().map(firstUserMessage);
    const regressed = texts.find(
      (t) => t.includes(taskKey('b-regress', '1.1')) && t.includes('attempt 2 of 2'),
    );
    expect(regressed).toContain('area_is_product');
    expect(regressed).toContain('not yours to fix, leave them: tests::needs_a_gpu');
    const ticked = texts.find((t) => t.includes(taskKey('d-tick', '1.1')) && t.includes('attempt 2 of 2'));
    expect(ticked).toContain('The run finished without changing any file but tasks.md');

    const status = await spawnFabric(
      ['daemon', 'status', '--repo', repo, '--config', sandbox.configPath, '--json'],
      { env, cwd: sandbox.dir },
    );
    const body = JSON.parse(status.stdout) as {
      stats: {
        tasks: { change: string; attempts?: number; preexisting_failures: string[]; flaky_tests: string[] }[];
      };
      changes: { id: string; tasks: { attempts: number }[] }[];
    };
    const figures = Object.fromEntries(body.stats.tasks.map((t) => [t.change, t]));
    expect(figures['a-red']).toMatchObject({ preexisting_failures: ['tests::needs_a_gpu'], flaky_tests: [] });
    expect(figures['c-flaky']).toMatchObject({ flaky_tests: ['flaky::tests::flaky_once'] });
    expect(body.changes.map((c) => [c.id, c.tasks[0]!.attempts])).toEqual([
      ['a-red', 1],
      ['b-regress', 2],
      ['c-flaky', 1],
      ['d-tick', 2],
    ]);
    const human = await spawnFabric(['daemon', 'status', '--repo', repo, '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(human.stdout).toContain('flaky: flaky::tests::flaky_once');
    expect(human.stdout).toContain('pre-existing failures (red at HEAD): tests::needs_a_gpu');
    expect(run.stderr).toContain('$ cargo test --no-fail-fast');
  }, 240_000);
});

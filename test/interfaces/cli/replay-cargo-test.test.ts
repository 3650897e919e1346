import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { tempDir } from '../../support/temp-dirs.ts';

const MODEL = 'qwen/qwen3-coder-30b';

/**
 * A crate whose two tests end in one order in the directory it was written to and in the other
 * order anywhere else (a replay's copy): the slow test sleeps. libtest prints each result line
 * as its test ends, so a faithful replay of `cargo test` prints the same results reordered.
 */
async function orderedCrate(dir: string, original: string, betaPasses = true): Promise<void> {
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeFile(
    join(dir, 'Cargo.toml'),
    '[package]\nname = "ordered"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
  );
  await writeFile(
    join(dir, 'src/lib.rs'),
    `pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    const ORIGINAL: &str = ${JSON.stringify(original)};

    fn pause_if(slow: bool) {
        if slow {
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
    }

    #[test]
    fn alpha() {
        pause_if(env!("CARGO_MANIFEST_DIR") == ORIGINAL);
        assert_eq!(super::add(1, 2), 3);
    }

    #[test]
    fn beta() {
        pause_if(env!("CARGO_MANIFEST_DIR") != ORIGINAL);
        assert_eq!(super::add(2, 2), ${betaPasses ? 4 : 5});
    }
}
`,
  );
}

describe('fabric replay --execute of a run that ran cargo test', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterAll(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('compares each test outcome, not the order libtest printed them in, and still reports a changed outcome', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo test' } }] } },
        {
          reply: {
            toolCalls: [{ name: 'finish_task', arguments: { summary: 'Tests pass.', artifacts: [] } }],
          },
        },
      ],
    });
    sandbox = await makeSandbox({
      specialists: {
        rust: {
          builder: 'builtin:rust',
          sandbox: { allowed_commands: ['cargo check', 'cargo test'], timeout_s: 300 },
        },
      },
    });
    const env = testEnv(sandbox, server.url);
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox!.configPath], { env, cwd: sandbox!.dir });
    const original = await tempDir('fabric-ordered-');
    await orderedCrate(original, original);
    const pristine = await tempDir('fabric-ordered-copy-');
    await orderedCrate(pristine, original);

    const ran = await fabric(['run', '-s', 'rust', '--workspace', original, '--json', 'Run the tests']);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const run = JSON.parse(ran.stdout) as RunResult;
    expect(run).toMatchObject({ status: 'succeeded', steps: 2 });

    const same = await fabric(['replay', run.run_id, '--execute', '--workspace', pristine]);
    expect(same.exitCode, `${same.stdout}\n${same.stderr}`).toBe(0);
    expect(same.stdout).toMatch(/^no differences: 2 tool calls answered as in run/m);

    const broken = await tempDir('fabric-ordered-broken-');
    // The same crate but for beta's assertion: only beta's outcome differs from the run's.
    await orderedCrate(broken, original, false);
    const differs = await fabric(['replay', run.run_id, '--execute', '--workspace', broken]);
    expect(differs.exitCode, differs.stdout).toBe(1);
    expect(differs.stdout).toMatch(/^ {2}\[1\] shell \(\S+\): the tool result differs$/m);
    expect(differs.stdout).toContain('test tests::beta ... FAILED');
  });
});

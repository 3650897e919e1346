import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { makeSandbox, SOURCE_CLI, type Sandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

/**
 * `fabric run … | head -1`: the reader goes away while the run goes on. The later turns are
 * slowed down so that the writes after the first line meet a closed pipe (EPIPE).
 */
describe('fabric run whose stdout or stderr is closed by the reader', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: CONVERSION_SCRIPT.map((turn) => ({ ...turn, delayMs: 150 })),
    });
  });
  afterEach(async () => {
    await server.stop();
    await sandbox.cleanup();
  });

  async function pipeline(shellTail: string, extraArgs: string[] = []) {
    const args = ['run', '-s', 'units', '--config', sandbox.configPath, ...extraArgs, 'Convert 3 km'];
    const quoted = [process.execPath, SOURCE_CLI, ...args].map((a) => `'${a}'`).join(' ');
    // pipefail: the status printed is fabric's own, not that of the reader.
    const shell = await execa(
      'bash',
      ['-c', `set -o pipefail; ${quoted} ${shellTail}; echo "status=$?" >&2`],
      {
        reject: false,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/tmp',
          ...testEnv(sandbox, server.url),
        },
        extendEnv: false,
        cwd: sandbox.dir,
      },
    );
    const [runId] = await readdir(sandbox.runsDir);
    const runlog = join(sandbox.runsDir, runId ?? '', 'runlog.jsonl');
    const events = parseRunlog(await readFile(runlog, 'utf8'), runlog).events;
    return { shell, events };
  }

  it('goes on to run_end when stdout and stderr both go to `head -1`', async () => {
    const { shell, events } = await pipeline('2>&1 | head -1');
    expect(shell.stdout).toMatch(/^fabric run /);
    expect(shell.stderr).toBe('status=0');
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  });

  it('goes on to run_end when stderr is closed before the first step', async () => {
    const { shell, events } = await pipeline('2>&1 >/dev/null | true');
    expect(shell.stderr).toBe('status=0');
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  });

  it('goes on to run_end and keeps its exit code when stdout is closed before the result', async () => {
    const { shell, events } = await pipeline('2>/dev/null | head -c 0', ['--json']);
    expect(shell.stderr).toBe('status=0');
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  });
});

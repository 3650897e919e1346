import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { SOURCE_CLI, type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_KINDS, CONVERSION_SCRIPT } from '../../support/scripts.ts';

describe('fabric run for scripts: the task from stdin, the events as JSON lines', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
  });
  afterEach(async () => {
    await server.stop();
    await sandbox.cleanup();
  });

  function fabric(args: string[], input: string) {
    return execa(
      process.execPath,
      [SOURCE_CLI, 'run', '-s', 'units', '--config', sandbox.configPath, ...args],
      {
        cwd: sandbox.dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...testEnv(sandbox, server.url) },
        extendEnv: false,
        input,
        reject: false,
      },
    );
  }

  it('reads the task from stdin with "-" and streams every runlog event to stdout, then the result', async () => {
    const result = await fabric(['--events', 'jsonl', '--json', '-'], 'Convert 3 km\nto miles\n');
    expect(result.exitCode, result.stderr).toBe(0);
    const lines = result.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const run = lines.pop() as unknown as RunResult;
    expect(run).toMatchObject({ status: 'succeeded', payload: { answer: '1.864114 mi' } });
    expect(lines.map((event) => event.kind)).toEqual(CONVERSION_KINDS);
    expect(lines[0]).toMatchObject({ kind: 'run_start', task: 'Convert 3 km\nto miles', run_id: run.run_id });
    // Progress stays on stderr.
    expect(result.stderr).toContain('finish_task rejected');
  });

  it('prints only event lines without --json, and refuses an empty stdin or another --events format', async () => {
    const events = await fabric(['--events', 'jsonl', '-'], 'Convert 3 km to miles');
    expect(events.exitCode).toBe(0);
    for (const line of events.stdout.trim().split('\n')) expect(JSON.parse(line)).toHaveProperty('kind');
    const empty = await fabric(['-'], '  \n');
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toContain('a TASK (standard input was empty)');
    const yaml = await fabric(['--events', 'yaml', 'Convert'], '');
    expect(yaml.exitCode).toBe(2);
    expect(yaml.stderr).toContain('--events takes "jsonl"');
  });
});

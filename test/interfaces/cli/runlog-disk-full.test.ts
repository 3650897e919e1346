/**
 * Issue 35: a runlog that cannot be written because its disk is full. A real full filesystem: a
 * 64 KiB tmpfs mounted as the runs directory (mounting needs root; elsewhere the test says so
 * and is skipped). The run ends with `runlog_unwritable`, the message saying what to do, and the
 * runlog ends with its last whole line, which `fabric runs show` reads.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, readFile, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';
/** A conversion with new arguments each time (the same call over and over would be stuck). */
const convert = (value: number): ScriptedTurn => ({
  reply: {
    content: 'Converting once more, to be sure of the figure. '.repeat(10),
    toolCalls: [{ name: 'convert_units', arguments: { value, from: 'km', to: 'mi' } }],
  },
});

function mounted(dir: string): boolean {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('a runlog on a full disk', () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  let full: string;
  let canMount = false;

  beforeAll(async () => {
    sandbox = await makeSandbox({ loop: { max_steps: 400 } });
    full = join(sandbox.dir, 'full');
    await mkdir(full);
    canMount = mounted(full);
    if (!canMount) console.warn('runlog-disk-full: cannot mount a tmpfs (not root); skipped');
    // Far more steps than 64 KiB of runlog holds.
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true, contextLength: 1_000_000 }],
      script: Array.from({ length: 300 }, (_, i) => convert(i + 1)),
    });
  });
  afterAll(async () => {
    await server?.stop();
    if (canMount) execFileSync('umount', [full]);
    await rmdir(full).catch(() => {});
    await sandbox?.cleanup();
  });

  it('ends the run with runlog_unwritable and leaves no torn last line', async (context) => {
    if (!canMount) context.skip();
    const env = testEnv(sandbox, server.url, { FABRIC_RUNS_DIR: full });
    const out = await runFabricInProcess(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km to miles'],
      { env, cwd: sandbox.dir },
    );
    expect(out.exitCode, out.stderr).toBe(1);
    const error = (JSON.parse(out.stdout) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('runlog_unwritable');
    expect(error.message).toMatch(
      /^Cannot write the runlog .*runlog\.jsonl: .*ENOSPC.*\. Free disk space or set FABRIC_RUNS_DIR to a writable directory\.$/,
    );
    // The run got going before the disk filled.
    expect(server.chatRequests().length).toBeGreaterThan(5);

    const path = /Cannot write the runlog (\S+runlog\.jsonl)/.exec(error.message)![1]!;
    const text = await readFile(path, 'utf8');
    expect(text.length).toBeGreaterThan(30_000);
    // Every line whole: the part of the line the disk cut was taken back.
    expect(text.endsWith('\n')).toBe(true);
    const lines = text.trimEnd().split('\n');
    const seqs = lines.map((line) => (JSON.parse(line) as { seq: number }).seq);
    expect(seqs).toEqual(lines.map((_, i) => i + 1));

    // A reader takes it as it is: a run without its end, from a process that is gone.
    const shown = await runFabricInProcess(['runs', 'show', path, '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stderr).not.toMatch(/torn/i);
  });
});

import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE, sentMessages } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { appendFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { exampleCrate, rustSandbox } from '../../support/rust-run.ts';

/**
 * SPEC §19 steering, end to end: a plain `fabric run` process owns the run; `fabric steer` in
 * another process finds it through the runs directory alone and its message reaches the model.
 */
const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric steer to a plain fabric run', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let runs: KilledRuns | undefined;
  afterEach(async () => {
    await runs?.stop();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  it('--interrupt cuts the hung turn; the next request is the earlier one plus the message; stale and ended runs are refused', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted) throw new Error('script');
    // The second turn never answers: only an interrupt gets the run past it.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [convert, { hang: true }, rejected, accepted],
    });
    const env = testEnv(sandbox, llm.url);
    runs = new KilledRuns(sandbox, env);
    const child = runs.spawn(['--specialist', 'units', 'Convert 3 km to miles']);
    const fake = llm;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(2), PATIENCE);
    const owner = runs;
    let runId = '';
    await vi.waitFor(async () => {
      const { stdout } = await runFabricInProcess(['runs', '--json', '--config', sandbox?.configPath ?? ''], {
        env,
        cwd: sandbox?.dir ?? '',
      });
      runId = (JSON.parse(stdout) as { runs: { run_id: string }[] }).runs[0]?.run_id ?? '';
      expect(runId).not.toBe('');
    }, PATIENCE);
    const cli = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox?.configPath ?? ''], { env, cwd: sandbox?.dir ?? '' });

    const stale = await cli(['steer', runId, 'too late', '--expected-step', '7']);
    expect(stale.exitCode).toBe(2);
    expect(stale.stderr).toContain('is at step 2, not 7');
    expect(fake.chatRequests()).toHaveLength(2);

    // An empty id is the start of every id: it names no run, not the only one there is.
    const empty = await cli(['steer', '', 'to nobody']);
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toContain('A run id cannot be empty');
    // A writer that died mid-line: the next message is a line of its own, not glued to it.
    await appendFile(join(sandbox.runsDir, runId, 'inbox.jsonl'), '{"id":"torn","kind":"mess');

    const text = 'The answer must be in miles, with six decimals.';
    const sent = await cli(['steer', runId, text, '--interrupt', '--expected-step', '2', '--json']);
    expect(sent.exitCode, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout)).toMatchObject({ run_id: runId, after_step: 2, verb: 'steer' });

    await vi.waitFor(() => expect(fake.chatRequests().length).toBeGreaterThanOrEqual(3), PATIENCE);
    const before = sentMessages(fake, 1);
    const after = sentMessages(fake, 2);
    // The earlier messages byte for byte, then the person's message at the end.
    expect(JSON.stringify(after.slice(0, before.length))).toBe(JSON.stringify(before));
    expect(after.slice(before.length)).toEqual([{ role: 'user', content: text }]);

    expect((await child).exitCode).toBe(0);
    const events = await owner.events(runId);
    expect(events.find((event) => event.kind === 'steer_message')).toMatchObject({
      text,
      mode: 'interrupt',
      channel: 'cli',
      after_step: 2,
    });
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });

    const ended = await cli(['steer', runId, 'anything']);
    expect(ended.exitCode).toBe(2);
    expect(ended.stderr).toContain('has ended (succeeded)');
  }, 240_000);

  it('--interrupt stops a command that is running: it is killed, answered as stopped, and the message follows', async () => {
    sandbox = await rustSandbox({}, ['sleep']);
    const workspace = await exampleCrate();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'sleep 600' } }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Stopped waiting.' } }] } },
      ],
    });
    const env = testEnv(sandbox, llm.url);
    runs = new KilledRuns(sandbox, env);
    const child = runs.spawn(['--specialist', 'rust', '--workspace', workspace, 'Wait for the build']);
    const owner = runs;
    let runId = '';
    // The command has started (its tool_started is on disk before it runs).
    await vi.waitFor(async () => {
      [runId = ''] = (await readdir(sandbox?.runsDir ?? '').catch(() => [])).filter(
        (name) => !name.startsWith('.'),
      );
      expect((await owner.events(runId)).some((event) => event.kind === 'tool_started')).toBe(true);
    }, PATIENCE);
    const text = 'Do not wait for it: the build is done.';
    const sent = await runFabricInProcess(
      ['steer', runId, text, '--interrupt', '--config', sandbox.configPath],
      { env, cwd: sandbox.dir },
    );
    expect(sent.exitCode, sent.stderr).toBe(0);
    const done = await child;
    expect(done.exitCode, done.stderr).toBe(0);
    const next = sentMessages(llm, 1);
    const result = next.at(-2) as { role: string; content: string };
    expect(result.role).toBe('tool');
    expect(result.content).toContain('a person interrupted this step');
    expect(result.content).toContain('cancelled; it was killed');
    expect(next.at(-1)).toEqual({ role: 'user', content: text });
    const events = await owner.events(runId);
    expect(events.find((event) => event.kind === 'tool_error')).toMatchObject({
      tool: 'shell',
      reason: 'failed',
    });
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  }, 240_000);
});

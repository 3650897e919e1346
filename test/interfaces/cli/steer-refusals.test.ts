import { access } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_STEER_TEXT } from '../../../src/application/run/steer-run.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { makeFabric } from '../http/http-harness.ts';
import type { RunEventInput } from '../../../src/domain/run-events.ts';
import { FileApprovalStore } from '../../../src/infrastructure/runlog/file-approval-store.ts';
import { succeededRun, writeRunlog } from '../../infrastructure/control/fixtures.ts';
import { pendingApproval } from '../../support/approval-fixture.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';

/** A run that ended as `status` (with `error`), written as a real runlog. */
function endedRun(status: string, error: { code: string; message: string } | null = null): RunEventInput[] {
  const lines = succeededRun();
  const end = lines.at(-1) as RunEventInput & { kind: 'run_end' };
  return [...lines.slice(0, -1), { ...end, status, error, payload: null } as RunEventInput];
}

/**
 * `fabric steer`, `pause` and `unpause` to a run that is not running (SPEC §19): `run_finished`,
 * and the message says what can be done with a run that ended that way — never a flag that does
 * not exist, never a resume that would be refused.
 */
describe('fabric steer, pause and unpause refuse a run that is not running, saying what can be done', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
  });

  it('names resume --max-steps only where resume takes it, and the approval a parked run waits for', async () => {
    sandbox = await makeSandbox();
    const at = '2026-01-01T00:00:00Z';
    await writeRunlog(sandbox.runsDir, 'done-run', at, succeededRun());
    await writeRunlog(sandbox.runsDir, 'limit-run', at, endedRun('max_steps'));
    await writeRunlog(sandbox.runsDir, 'parked-run', at, endedRun('awaiting_approval'));
    await writeRunlog(
      sandbox.runsDir,
      'down-run',
      at,
      endedRun('failed', { code: 'backend_unavailable', message: 'LM Studio did not answer.' }),
    );
    await writeRunlog(
      sandbox.runsDir,
      'broken-run',
      at,
      endedRun('failed', { code: 'backend_error', message: 'HTTP 400' }),
    );
    await new FileApprovalStore(sandbox.runsDir).create(
      pendingApproval('apr_parked00001', 'parked-run', 'cargo tree'),
    );
    const cli = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox!.configPath], {
        env: testEnv(sandbox!, 'http://127.0.0.1:9'),
        cwd: sandbox!.dir,
      });

    const refusals: Record<string, string> = {};
    for (const run of ['done-run', 'limit-run', 'parked-run', 'down-run', 'broken-run'])
      for (const args of [
        ['steer', run, 'look at damage.rs'],
        ['pause', run],
        ['unpause', run],
      ]) {
        const refused = await cli([...args, '--json']);
        expect(refused.exitCode, refused.stderr).toBe(2);
        const { error } = JSON.parse(refused.stdout) as { error: { code: string; message: string } };
        expect(error.code).toBe('run_finished');
        expect(error.message).not.toContain('--more-steps');
        refusals[run] = error.message;
      }

    expect(refusals['done-run']).toContain('has ended (succeeded)');
    expect(refusals['done-run']).toContain('cannot go on: start a new run');
    expect(refusals['done-run']).not.toContain('fabric resume');
    expect(refusals['limit-run']).toContain('`fabric resume limit-run --max-steps N`');
    expect(refusals['parked-run']).toContain('parked on an approval (awaiting_approval)');
    expect(refusals['parked-run']).toContain('`fabric approvals answer apr_parked00001 approve|deny`');
    expect(refusals['parked-run']).toContain('POST /v1/approvals/apr_parked00001');
    expect(refusals['parked-run']).not.toContain('fabric resume');
    expect(refusals['down-run']).toContain('`fabric resume down-run`');
    expect(refusals['broken-run']).toContain('It failed and cannot go on');
    expect(refusals['broken-run']).not.toContain('fabric resume');

    // The flag named is the one resume has.
    const help = await cli(['resume', '--help']);
    expect(help.stdout).toContain('--max-steps N');
  });

  it('refuses a steer message over 100,000 characters as HTTP does, and writes nothing', async () => {
    sandbox = await makeSandbox();
    // A run this test's own process owns (alive), at step 1.
    const [start, ...rest] = succeededRun().slice(0, 3);
    await writeRunlog(sandbox.runsDir, 'live-run', new Date().toISOString(), [
      { ...start, pid: process.pid, host: hostname() } as RunEventInput,
      ...rest,
    ]);
    const env = testEnv(sandbox, 'http://127.0.0.1:9');
    const cli = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox!.configPath], { env, cwd: sandbox!.dir });
    const inbox = join(sandbox.runsDir, 'live-run', 'inbox.jsonl');

    const long = await cli(['steer', 'live-run', 'x'.repeat(130_000)]);
    expect(long.exitCode).toBe(2);
    expect(long.stderr).toContain('The message is 130000 characters; a steer message holds at most 100000');
    await expect(access(inbox)).rejects.toThrow();

    // The same limit over HTTP: one constant for both.
    expect(MAX_STEER_TEXT).toBe(100_000);
    const fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    try {
      const response = await createApp({ fabric, requireToken: false }).request(
        '/v1/runs/live-run/messages',
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ text: 'x'.repeat(MAX_STEER_TEXT + 1) }),
        },
      );
      expect(response.status).toBe(400);
      expect(JSON.stringify(await response.json())).toContain('text: expected at most 100000 characters');
    } finally {
      await fabric.close();
    }
    await expect(access(inbox)).rejects.toThrow();

    // At the limit (once trimmed) it is taken.
    const longest = await cli(['steer', 'live-run', ` ${'x'.repeat(MAX_STEER_TEXT)} `]);
    expect(longest.exitCode, longest.stderr).toBe(0);
    await access(inbox);
  });
});

import { afterEach, describe, expect, it } from 'vitest';
import { FileApprovalStore } from '../../../src/infrastructure/runlog/file-approval-store.ts';
import { pendingApproval } from '../../support/approval-fixture.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';

describe('fabric approvals answer --expires', () => {
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await sandbox?.cleanup();
  });

  it('refuses an expiry past 10 years as a usage error, naming the limit, and writes nothing', async () => {
    sandbox = await makeSandbox();
    const store = new FileApprovalStore(sandbox.runsDir);
    await store.create(pendingApproval('apr_expiry00001', 'run-a', 'cargo tree'));
    const cli = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox!.configPath], {
        env: testEnv(sandbox!, 'http://127.0.0.1:9'),
        cwd: sandbox!.dir,
      });
    const answer = ['approvals', 'answer', 'apr_expiry00001', 'approve', '--scope', 'specialist'];

    for (const expires of ['999999999999d', '3651d', `${'9'.repeat(400)}s`]) {
      const refused = await cli([...answer, '--expires', expires]);
      expect(refused.exitCode, refused.stderr).toBe(2);
      expect(refused.stderr).toContain(
        `--expires is at most 10 years (3650d, 315360000 seconds), not "${expires}"`,
      );
      expect(refused.stderr).not.toContain('Unexpected error');
    }
    expect((await store.get('apr_expiry00001'))?.state).toBe('pending');
    expect(await store.grants({ all: true })).toEqual([]);

    // The limit itself is a grant that lasts 10 years.
    const before = Date.now();
    const granted = await cli([...answer, '--expires', '3650d', '--json']);
    expect(granted.exitCode, granted.stderr).toBe(0);
    const [grant] = await store.grants({});
    const lasts = Date.parse(grant?.expires_at ?? '') - before;
    expect(lasts).toBeGreaterThanOrEqual(3650 * 86_400_000 - 60_000);
    expect(lasts).toBeLessThanOrEqual(3650 * 86_400_000 + 60_000);
  });

  it("refuses a flag of another verb instead of ignoring it, and --grants with an approval's state", async () => {
    sandbox = await makeSandbox();
    const cli = (args: string[]) =>
      runFabricInProcess([...args, '--config', sandbox!.configPath], {
        env: testEnv(sandbox!, 'http://127.0.0.1:9'),
        cwd: sandbox!.dir,
      });
    const refusals: [string[], string][] = [
      [['approvals', 'list', '--message', 'hi'], '--message belongs to fabric approvals answer, not list'],
      [['approvals', 'list', '--scope', 'run'], '--scope belongs to fabric approvals answer, not list'],
      [
        ['approvals', 'revoke', 'grt_x', '--message', 'x'],
        '--message belongs to fabric approvals answer, not revoke',
      ],
      [
        ['approvals', 'answer', 'apr_x', 'approve', '--state', 'all'],
        '--state belongs to fabric approvals list',
      ],
      [['approvals', 'list', '--grants', '--state', 'pending'], '--state pending is for approvals'],
    ];
    for (const [args, message] of refusals) {
      const refused = await cli(args);
      expect(refused.exitCode, args.join(' ')).toBe(2);
      expect(refused.stderr).toContain(message);
    }
    expect((await cli(['approvals', 'list', '--grants', '--state', 'all'])).exitCode).toBe(0);
  });
});

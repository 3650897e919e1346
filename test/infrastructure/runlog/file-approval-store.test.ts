import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { answerApproval } from '../../../src/application/approvals/answer-approval.ts';
import { type ApprovalRecord, proposePatterns } from '../../../src/domain/approvals.ts';
import type { FabricError } from '../../../src/domain/errors.ts';
import { FileApprovalStore } from '../../../src/infrastructure/runlog/file-approval-store.ts';

const argv = ['cargo', 'tree', '-e', 'features'];

function record(id: string, extra: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    id,
    run_id: 'run-a',
    specialist: 'rust',
    step: 1,
    call_id: `call-${id}`,
    tool: 'shell',
    argv,
    arguments: JSON.stringify({ command: argv.join(' ') }),
    rule: 'policy.rules[0] (shell "cargo tree": ask)',
    requested_at: new Date().toISOString(),
    proposals: proposePatterns({ tool: 'shell', argv, arguments: '{}' }),
    state: 'pending',
    ...extra,
  };
}

describe('FileApprovalStore', () => {
  let dir: string | undefined;
  afterEach(async () => {
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('of many answers given at once by separate stores (processes), exactly one wins', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-approvals-'));
    await new FileApprovalStore(dir).create(record('apr_race'));
    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) =>
        answerApproval(
          new FileApprovalStore(dir!),
          'apr_race',
          { decision: i % 2 === 0 ? 'approve' : 'deny', channel: `c${i}` },
          new Date(),
        ),
      ),
    );
    const won = outcomes.filter((outcome) => outcome.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const outcome of outcomes)
      if (outcome.status === 'rejected')
        expect((outcome.reason as FabricError).code).toBe('approval_answered');
    const stored = await new FileApprovalStore(dir).get('apr_race');
    expect(stored?.answer?.channel).toBe(
      (won[0] as PromiseFulfilledResult<ApprovalRecord>).value.answer?.channel,
    );
  });

  it('finds by a unique prefix, refuses an ambiguous one, lists by state and run', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-approvals-'));
    const store = new FileApprovalStore(dir);
    await store.create(record('apr_abc1'));
    await store.create(record('apr_abc2', { run_id: 'run-b' }));
    expect((await store.get('apr_abc1'))?.id).toBe('apr_abc1');
    await expect(store.get('apr_abc')).rejects.toThrow('is the start of 2 approval ids');
    expect(await store.get('apr_zzz')).toBeUndefined();
    await answerApproval(store, 'apr_abc1', { decision: 'deny', channel: 'cli' }, new Date());
    expect((await store.list({ state: 'pending' })).map((entry) => entry.id)).toEqual(['apr_abc2']);
    expect((await store.list({ runId: 'run-a' })).map((entry) => entry.state)).toEqual(['denied']);
    expect((await store.forCall('run-b', 'call-apr_abc2'))?.id).toBe('apr_abc2');
  });

  it('an approval past its expiry reads expired and refuses a late answer; it is never a denial', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-approvals-'));
    const store = new FileApprovalStore(dir);
    await store.create(record('apr_old', { expires_at: new Date(Date.now() - 1000).toISOString() }));
    expect((await store.get('apr_old'))?.state).toBe('expired');
    await expect(
      answerApproval(store, 'apr_old', { decision: 'approve', channel: 'http' }, new Date()),
    ).rejects.toThrow('already has its answer (expired');
    expect((await store.get('apr_old'))?.answer).toMatchObject({ state: 'expired', channel: 'timeout' });
  });

  it('a specialist answer leaves a grant with the chosen pattern and expiry; revoke ends it', async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-approvals-'));
    const store = new FileApprovalStore(dir);
    await store.create(record('apr_g'));
    await expect(
      answerApproval(
        store,
        'apr_g',
        { decision: 'approve', scope: 'once', pattern: 1, channel: 'cli' },
        new Date(),
      ),
    ).rejects.toThrow('needs a scope that lasts');
    await expect(
      answerApproval(store, 'apr_g', { decision: 'deny', scope: 'run', channel: 'cli' }, new Date()),
    ).rejects.toThrow('A denial is for this call only');
    await answerApproval(
      store,
      'apr_g',
      { decision: 'approve', scope: 'specialist', pattern: 1, expiresInS: 3600, channel: 'cli' },
      new Date(),
    );
    const [grant] = await store.grants();
    expect(grant).toMatchObject({
      scope: 'specialist',
      specialist: 'rust',
      pattern: { label: 'cargo tree <any arguments>' },
    });
    expect(grant?.expires_at).toBeDefined();
    await store.revoke(grant!.id.slice(0, 6), new Date().toISOString());
    expect(await store.grants()).toHaveLength(0);
    expect(await store.grants({ all: true })).toHaveLength(1);
    await expect(store.revoke('grt_nothing', '')).rejects.toThrow('No grant "grt_nothing"');
  });
});

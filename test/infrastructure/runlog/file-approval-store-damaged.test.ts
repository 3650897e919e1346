import { mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { answerApproval } from '../../../src/application/approvals/answer-approval.ts';
import { FileApprovalStore } from '../../../src/infrastructure/runlog/file-approval-store.ts';
import { pendingApproval } from '../../support/approval-fixture.ts';

// Files of the approval store that another tool cut, emptied or edited (a full disk, a hand
// edit): one such file never takes the others down, and each is named with what to do.

const record = (id: string) => pendingApproval(id, 'run-a', 'cargo tree -e features');

let runsDir: string;
let approvals: string;
let store: FileApprovalStore;
beforeEach(async () => {
  runsDir = await mkdtemp(join(tmpdir(), 'fabric-approvals-damaged-'));
  approvals = join(runsDir, '.approvals');
  store = new FileApprovalStore(runsDir);
  await store.create(record('apr_good00000001'));
});
afterEach(() => rm(runsDir, { recursive: true, force: true }));

const good = 'apr_good00000001';
const approve = { decision: 'approve' as const, channel: 'cli' };

describe('a damaged file of the approval store', () => {
  it('with fields missing: left out of the list and named, the others listed and answered', async () => {
    await writeFile(
      join(approvals, 'apr_bbbbbbbbbbbb.json'),
      JSON.stringify({ id: 'apr_bbbbbbbbbbbb', run_id: 'r', state: 'pending' }),
    );
    expect((await store.list({ state: 'pending' })).map((r) => r.id)).toEqual([good]);
    expect(await store.unreadable()).toEqual([
      expect.objectContaining({
        file: join(approvals, 'apr_bbbbbbbbbbbb.json'),
        problem: expect.stringMatching(/^specialist: /),
        fix: expect.stringContaining('asks again'),
      }),
    ]);
    await expect(store.get('apr_bbbbbbbbbbbb')).rejects.toMatchObject({
      code: 'approval_unreadable',
      message: expect.stringContaining(join(approvals, 'apr_bbbbbbbbbbbb.json')),
    });
    await expect(answerApproval(store, 'apr_bbbbbbbbbbbb', approve, new Date())).rejects.toMatchObject({
      code: 'approval_unreadable',
    });
    expect((await answerApproval(store, good, approve, new Date())).state).toBe('approved');
  });

  it('cut short: named as such, never reported as missing', async () => {
    await store.create(record('apr_cut000000001'));
    const path = join(approvals, 'apr_cut000000001.json');
    await writeFile(path, JSON.stringify(record('apr_cut000000001')).slice(0, 200));
    await expect(store.get('apr_cut000000001')).rejects.toMatchObject({
      code: 'approval_unreadable',
      message: expect.stringContaining('not whole JSON (cut short?)'),
    });
    expect((await store.unreadable()).map((bad) => bad.file)).toEqual([path]);
    // Naming another approval's id than its file's: not taken for it.
    await writeFile(path, JSON.stringify(record(good)));
    expect((await store.unreadable())[0]?.problem).toContain(`names id "${good}"`);
  });

  it('an answer cut short: the approval is pending, and the next answer moves it aside and stands', async () => {
    const answer = join(approvals, `${good}.answer.json`);
    await writeFile(answer, '{"state":"appr');
    // Not while it may still be being written (an answer is created, then written).
    await expect(answerApproval(store, good, approve, new Date())).rejects.toMatchObject({
      code: 'approval_answered',
    });
    const old = new Date(Date.now() - 60_000);
    await utimes(answer, old, old);
    expect((await store.get(good))?.state).toBe('pending');
    expect((await store.unreadable())[0]).toMatchObject({
      file: answer,
      fix: expect.stringContaining('answer it again'),
    });
    const [first, second] = await Promise.allSettled([
      answerApproval(new FileApprovalStore(runsDir), good, approve, new Date()),
      answerApproval(new FileApprovalStore(runsDir), good, { decision: 'deny', channel: 'http' }, new Date()),
    ]);
    // Exactly one answer stands, as for any two answers.
    expect([first.status, second.status].sort()).toEqual(['fulfilled', 'rejected']);
    expect((await new FileApprovalStore(runsDir).get(good))?.state).toMatch(/approved|denied/);
    expect(await store.unreadable()).toEqual([]);
    expect(
      (await readdir(approvals)).filter((name) => /\.answer\.json\.damaged-\d+$/.test(name)),
    ).toHaveLength(1);
  });

  it('a grant with fields missing is not in force, and is named', async () => {
    await answerApproval(store, good, { ...approve, scope: 'run', pattern: 1 }, new Date());
    expect(await store.grants()).toHaveLength(1);
    const [grant] = await readdir(join(approvals, 'grants'));
    await writeFile(join(approvals, 'grants', grant ?? ''), '{}');
    expect(await store.grants()).toEqual([]);
    expect((await store.unreadable()).map((bad) => bad.fix)).toEqual([
      'the grant is not in force; delete the file',
    ]);
  });

  it('an empty id names nothing, though it is the start of every id', async () => {
    for (const attempt of [
      store.get(''),
      answerApproval(store, ' ', approve, new Date()),
      store.revoke('', 'now'),
    ])
      await expect(attempt).rejects.toMatchObject({
        code: 'usage',
        message: expect.stringContaining('cannot be empty'),
      });
  });
});

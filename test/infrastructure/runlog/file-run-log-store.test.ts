import { appendFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { FabricError } from '../../../src/domain/errors.ts';
import { FileRunLogStore } from '../../../src/infrastructure/runlog/file-run-log-store.ts';
import { tempDir } from '../../support/temp-dirs.ts';
import { runLogStoreContract } from './run-log-store-contract.ts';

const tempRuns = () => tempDir('fabric-runs-');

runLogStoreContract('FileRunLogStore', async () => new FileRunLogStore(await tempRuns()));

describe('FileRunLogStore on disk', () => {
  it('writes one JSON object a line at <runs>/<run_id>/runlog.jsonl', async () => {
    const dir = await tempRuns();
    const store = new FileRunLogStore(dir);
    const log = await store.create('20260101T000000Z-abcdef');
    await log.append({ kind: 'text_fallback', step: 1, content: 'line\nbreak' });
    await log.close();
    const text = await readFile(join(dir, '20260101T000000Z-abcdef', 'runlog.jsonl'), 'utf8');
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(text)).toMatchObject({ kind: 'text_fallback', content: 'line\nbreak' });
  });

  it('shows a reader of a live run every event already appended, before close', async () => {
    const store = new FileRunLogStore(await tempRuns());
    const log = await store.create('20260101T000000Z-live00');
    const appended = [];
    for (let step = 1; step <= 3; step += 1)
      appended.push(await log.append({ kind: 'text_fallback', step, content: `s${step}` }));
    const contents = await store.read('20260101T000000Z-live00');
    expect(contents.events).toEqual(appended);
    expect(contents.torn).toBe(false);
    await log.close();
  });

  it('tolerates a torn last line left by a killed process', async () => {
    const dir = await tempRuns();
    const store = new FileRunLogStore(dir);
    const log = await store.create('20260101T000000Z-torn00');
    await log.append({ kind: 'text_fallback', step: 1, content: 'whole' });
    await log.close();
    await appendFile(store.pathOf('20260101T000000Z-torn00'), '{"v":1,"kind":"tool_res');
    const contents = await store.read('20260101T000000Z-torn00');
    expect(contents.torn).toBe(true);
    expect(contents.events).toHaveLength(1);
  });

  it("tells a runlog's last whole line's seq from its tail, past a torn line and a long one", async () => {
    const store = new FileRunLogStore(await tempRuns());
    const id = '20260101T000000Z-tail00';
    const log = await store.create(id);
    await log.append({ kind: 'text_fallback', step: 1, content: 'short' });
    // Longer than the tail read: the seq cannot be told from it, so null (sync reads the runlog).
    await log.append({ kind: 'text_fallback', step: 2, content: 'x'.repeat(70_000) });
    await log.close();
    expect(await store.lastSeq(id)).toBeNull();
    const more = await store.reopen(id);
    await more.append({ kind: 'text_fallback', step: 3, content: 'after' });
    await more.close();
    expect(await store.lastSeq(id)).toBe(3);
    await appendFile(store.pathOf(id), '{"v":1,"kind":"tool_res');
    expect(await store.lastSeq(id)).toBe(3);
    expect(await store.lastSeq('20260101T000000Z-none00')).toBeNull();
  });

  it('reports a damaged line in the middle with its line number', async () => {
    const dir = await tempRuns();
    const store = new FileRunLogStore(dir);
    await (await store.create('20260101T000000Z-bad000')).close();
    await writeFile(
      store.pathOf('20260101T000000Z-bad000'),
      '{"kind":"x","ts":"t","run_id":"r","seq":1}\nnot json\n{}\n',
    );
    const error = await store.read('20260101T000000Z-bad000').catch((e: unknown) => e);
    expect((error as FabricError).code).toBe('runlog_corrupt');
    expect((error as FabricError).message).toMatch(/runlog\.jsonl:2/);
  });

  it('finds a run by a unique prefix of its id', async () => {
    const store = new FileRunLogStore(await tempRuns());
    await (await store.create('20260101T000000Z-prefix')).close();
    expect((await store.read('20260101T000000Z-pre')).runId).toBe('20260101T000000Z-prefix');
  });
});

import { describe, expect, it } from 'vitest';
import type { RunLogStore } from '../../../src/application/ports.ts';
import { FabricError } from '../../../src/domain/errors.ts';

/** The behaviour every RunLogStore shares; each adapter's test file calls it. */
export function runLogStoreContract(name: string, makeStore: () => Promise<RunLogStore>): void {
  describe(`${name} (RunLogStore contract)`, () => {
    it('stamps every event with v, kind, ts, run_id and a seq that counts from 1', async () => {
      const store = await makeStore();
      const log = await store.create('20260101T000000Z-aaaaaa');
      const first = await log.append({ kind: 'text_fallback', step: 1, content: 'a' });
      const second = await log.append({ kind: 'text_fallback', step: 2, content: 'b' });
      await log.close();
      expect(first).toMatchObject({ v: 1, kind: 'text_fallback', run_id: '20260101T000000Z-aaaaaa', seq: 1 });
      expect(second.seq).toBe(2);
      expect(Number.isNaN(Date.parse(first.ts))).toBe(false);
    });

    it('reads back exactly what was appended, in order, by id and by location', async () => {
      const store = await makeStore();
      const log = await store.create('20260101T000000Z-bbbbbb');
      const written = [];
      for (let step = 1; step <= 5; step += 1)
        written.push(await log.append({ kind: 'text_fallback', step, content: `s${step}` }));
      await log.close();
      const byId = await store.read('20260101T000000Z-bbbbbb');
      expect(byId.events).toEqual(written);
      expect(byId.torn).toBe(false);
      expect((await store.read(log.location)).events).toEqual(written);
    });

    it('keeps seq order when appends are not awaited one by one', async () => {
      const store = await makeStore();
      const log = await store.create('20260101T000000Z-cccccc');
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          log.append({ kind: 'text_fallback', step: i, content: String(i) }),
        ),
      );
      await log.close();
      const { events } = await store.read('20260101T000000Z-cccccc');
      expect(events.map((event) => event.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    });

    it('lists runs newest first', async () => {
      const store = await makeStore();
      for (const id of ['20260101T000000Z-000001', '20260102T000000Z-000002'])
        await (await store.create(id)).close();
      expect((await store.list()).slice(0, 2)).toEqual([
        '20260102T000000Z-000002',
        '20260101T000000Z-000001',
      ]);
    });

    it('refuses to append after close and to create a run twice', async () => {
      const store = await makeStore();
      const log = await store.create('20260101T000000Z-dddddd');
      await log.close();
      await expect(log.append({ kind: 'text_fallback', step: 1, content: 'x' })).rejects.toThrow(/closed/);
      await expect(store.create('20260101T000000Z-dddddd')).rejects.toThrow();
    });

    it('answers run_not_found for an unknown run', async () => {
      const store = await makeStore();
      const error = await store.read('20991231T000000Z-ffffff').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FabricError);
      expect((error as FabricError).code).toBe('run_not_found');
    });
  });
}

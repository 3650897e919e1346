import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { PATIENCE, sentMessages } from '../../support/killed-run.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { type RunningApi, makeFabric, postJson, startApi } from './http-harness.ts';

/**
 * SPEC §19 steering over HTTP, a run inside the server: pause holds it between steps (no model
 * request until it is let go), a steer message sent meanwhile reaches the model after the step
 * with the earlier messages unchanged, and the refusals answer 404/409 with their codes.
 */
describe('POST /v1/runs/:id/messages, /pause and /resume of a running run', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let fabric: Fabric | undefined;
  let api: RunningApi | undefined;
  afterEach(async () => {
    await api?.stop();
    await fabric?.close();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function events(runId: string): Promise<RunEvent[]> {
    const path = join(sandbox?.runsDir ?? '', runId, 'runlog.jsonl');
    const text = await readFile(path, 'utf8').catch(() => '');
    return text === '' ? [] : parseRunlog(text, path).events;
  }

  it('pauses between steps, takes a steer message while paused, and goes on with it after', async () => {
    sandbox = await makeSandbox();
    const [convert, rejected, accepted] = CONVERSION_SCRIPT;
    if (!convert || !rejected || !accepted || !('reply' in convert)) throw new Error('script');
    // The first turn takes a while, so the pause is in the inbox before its step ends.
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [{ ...convert, delayMs: 1_500 }, rejected, accepted],
    });
    fabric = await makeFabric(sandbox, llm.url);
    api = await startApi(fabric);
    const base = api.url;
    const started = await postJson(`${base}/v1/runs`, { specialist: 'units', task: 'Convert 3 km to miles' });
    expect(started.status).toBe(202);
    const { run_id: runId } = (await started.json()) as { run_id: string };
    const fake = llm;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(1), PATIENCE);

    const paused = await postJson(`${base}/v1/runs/${runId}/pause`, {});
    expect(paused.status).toBe(202);
    await vi.waitFor(async () => {
      expect((await events(runId)).some((event) => event.kind === 'run_paused')).toBe(true);
    }, PATIENCE);
    const requestsWhilePaused = fake.chatRequests().length;

    const stale = await postJson(`${base}/v1/runs/${runId}/messages`, { text: 'late', expected_step: 9 });
    expect(stale.status).toBe(409);
    expect(((await stale.json()) as { error: { code: string } }).error.code).toBe('steer_stale_step');

    const text = 'Give the answer in miles, to six decimals.';
    const steered = await postJson(`${base}/v1/runs/${runId}/messages`, { text, mode: 'steer' });
    expect(steered.status).toBe(202);
    const going = await postJson(`${base}/v1/runs/${runId}/resume`, {});
    expect(going.status).toBe(202);

    await vi.waitFor(async () => {
      expect((await events(runId)).at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
    }, PATIENCE);
    const log = await events(runId);
    const kinds = log.map((event) => event.kind);
    const pausedAt = kinds.indexOf('run_paused');
    const goneOn = kinds.indexOf('run_unpaused');
    // Nothing asked of the model between the pause and its end.
    expect(pausedAt).toBeGreaterThan(0);
    expect(goneOn).toBeGreaterThan(pausedAt);
    expect(kinds.slice(pausedAt, goneOn)).not.toContain('llm_request');
    expect(log.find((event) => event.kind === 'steer_message')).toMatchObject({
      text,
      mode: 'steer',
      channel: 'http',
    });
    // The request after the pause: the first one's messages unchanged, then the step, then the person's.
    // (The pause lands after step 1 unless the machine is slow enough to let step 2 begin.)
    expect(fake.chatRequests().length).toBeGreaterThan(requestsWhilePaused);
    const before = sentMessages(fake, requestsWhilePaused - 1);
    const after = sentMessages(fake, requestsWhilePaused);
    expect(JSON.stringify(after.slice(0, before.length))).toBe(JSON.stringify(before));
    expect(after.at(-1)).toEqual({ role: 'user', content: text });

    const ended = await postJson(`${base}/v1/runs/${runId}/messages`, { text: 'anything' });
    expect(ended.status).toBe(409);
    expect(((await ended.json()) as { error: { code: string } }).error.code).toBe('run_finished');
    const missing = await postJson(`${base}/v1/runs/no-such-run/messages`, { text: 'anything' });
    expect(missing.status).toBe(404);
  });
});

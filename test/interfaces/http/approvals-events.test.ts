import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { type ApprovalRecord, proposePatterns } from '../../../src/domain/approvals.ts';
import { FileApprovalStore } from '../../../src/infrastructure/runlog/file-approval-store.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type RunningApi, type SseFrame, makeFabric, postJson, startApi } from './http-harness.ts';

const PATIENCE = { timeout: 20_000, interval: 50 };

function approval(id: string, runId: string, command: string): ApprovalRecord {
  const argv = command.split(' ');
  return {
    id,
    run_id: runId,
    specialist: 'rust',
    step: 1,
    call_id: `call-${id}`,
    tool: 'shell',
    argv,
    arguments: JSON.stringify({ command }),
    rule: 'policy.rules[0] (shell "cargo tree": ask)',
    requested_at: new Date().toISOString(),
    proposals: proposePatterns({ tool: 'shell', argv, arguments: '{}' }),
    state: 'pending',
  };
}

/** Follows an SSE response in the background: the frames as they come. */
function follow(response: Response): { frames: SseFrame[]; stop: () => Promise<void> } {
  const frames: SseFrame[] = [];
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  void (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      buffer += value;
      for (let split = buffer.indexOf('\n\n'); split >= 0; split = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, split);
        buffer = buffer.slice(split + 2);
        const lines = block.split('\n').filter((line) => !line.startsWith(':'));
        const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2);
        const data = field('data');
        if (data !== undefined) frames.push({ id: field('id'), event: field('event'), data });
      }
    }
  })();
  return { frames, stop: () => reader.cancel().catch(() => {}) };
}

const seen = (frames: readonly SseFrame[]) =>
  frames.map((frame) => {
    const data = JSON.parse(frame.data) as { kind: string; approval: ApprovalRecord };
    return `${frame.event} ${data.approval.id} ${data.approval.state}${data.approval.answer ? ` ${data.approval.answer.channel}` : ''}`;
  });

describe('GET /v1/approvals/events (SPEC §19): every approval as it is asked and answered', () => {
  let sandbox: Sandbox | undefined;
  let fabric: Fabric | undefined;
  let api: RunningApi | undefined;
  const streams: { stop: () => Promise<void> }[] = [];
  afterEach(async () => {
    for (const stream of streams.splice(0)) await stream.stop();
    await api?.stop();
    await fabric?.close();
    await sandbox?.cleanup();
  });

  it('sends the pending ones first, then each asked and answered here or by another process, filtered by run on demand', async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    await fabric.approvals.create(approval('apr_aaaaaaaaaaa1', 'run-a', 'cargo tree'));
    api = await startApi(fabric);
    // Another process on the same runs directory: a run asking, `fabric approvals answer`.
    const elsewhere = new FileApprovalStore(sandbox.runsDir);

    const all = await fetch(`${api.url}/v1/approvals/events`);
    expect(all.status).toBe(200);
    expect(all.headers.get('content-type')).toContain('text/event-stream');
    const stream = follow(all);
    streams.push(stream);
    const onlyB = follow(await fetch(`${api.url}/v1/approvals/events?run=run-b`));
    streams.push(onlyB);
    await vi.waitFor(
      () => expect(seen(stream.frames)).toEqual(['approval_requested apr_aaaaaaaaaaa1 pending']),
      PATIENCE,
    );

    await elsewhere.create(approval('apr_bbbbbbbbbbb2', 'run-b', 'cargo tree -e features'));
    await vi.waitFor(
      () => expect(seen(stream.frames).at(-1)).toBe('approval_requested apr_bbbbbbbbbbb2 pending'),
      PATIENCE,
    );

    const answered = await postJson(`${api.url}/v1/approvals/apr_aaaaaaaaaaa1`, { decision: 'approve' });
    expect(answered.status).toBe(200);
    await vi.waitFor(
      () => expect(seen(stream.frames).at(-1)).toBe('approval_decided apr_aaaaaaaaaaa1 approved http'),
      PATIENCE,
    );
    const again = await postJson(`${api.url}/v1/approvals/apr_aaaaaaaaaaa1`, { decision: 'deny' });
    expect(again.status).toBe(409);

    await elsewhere.answer('apr_bbbbbbbbbbb2', {
      state: 'denied',
      scope: 'once',
      pattern: 0,
      channel: 'cli',
      message: 'not now',
      at: new Date().toISOString(),
    });
    await vi.waitFor(
      () => expect(seen(stream.frames).at(-1)).toBe('approval_decided apr_bbbbbbbbbbb2 denied cli'),
      PATIENCE,
    );
    // Each change once, in order; a refused second answer changes nothing.
    expect(seen(stream.frames)).toEqual([
      'approval_requested apr_aaaaaaaaaaa1 pending',
      'approval_requested apr_bbbbbbbbbbb2 pending',
      'approval_decided apr_aaaaaaaaaaa1 approved http',
      'approval_decided apr_bbbbbbbbbbb2 denied cli',
    ]);
    const ids = stream.frames.map((frame) => Number(frame.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(seen(onlyB.frames)).toEqual([
      'approval_requested apr_bbbbbbbbbbb2 pending',
      'approval_decided apr_bbbbbbbbbbb2 denied cli',
    ]);

    // A client connecting now finds nothing pending.
    const late = follow(await fetch(`${api.url}/v1/approvals/events`));
    streams.push(late);
    await elsewhere.create(approval('apr_ccccccccccc3', 'run-c', 'cargo tree --depth 1'));
    await vi.waitFor(
      () => expect(seen(late.frames)).toEqual(['approval_requested apr_ccccccccccc3 pending']),
      PATIENCE,
    );

    // Asked and answered elsewhere between two looks: still sent asked (pending, no answer), then decided.
    await elsewhere.create(approval('apr_ddddddddddd4', 'run-d', 'cargo tree --depth 2'));
    await elsewhere.answer('apr_ddddddddddd4', {
      state: 'approved',
      scope: 'once',
      pattern: 0,
      channel: 'cli',
      at: new Date().toISOString(),
    });
    await vi.waitFor(
      () =>
        expect(seen(late.frames).slice(1)).toEqual([
          'approval_requested apr_ddddddddddd4 pending',
          'approval_decided apr_ddddddddddd4 approved cli',
        ]),
      PATIENCE,
    );
  });

  it('numbers the frames from one counter the server shares between connections, as the doc says', async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    await fabric.approvals.create(approval('apr_eeeeeeeeeee5', 'run-e', 'cargo tree'));
    api = await startApi(fabric);
    const ids: number[][] = [];
    for (let connection = 0; connection < 3; connection += 1) {
      const stream = follow(await fetch(`${api.url}/v1/approvals/events`));
      streams.push(stream);
      await vi.waitFor(() => expect(stream.frames).toHaveLength(1), PATIENCE);
      ids.push(stream.frames.map((frame) => Number(frame.id)));
    }
    // Each connection gets the pending approval again, under the next id, not under 1 each time.
    const [first = [], second = [], third = []] = ids;
    expect(second[0]).toBeGreaterThan(first[0] ?? Number.POSITIVE_INFINITY);
    expect(third[0]).toBeGreaterThan(second[0] ?? Number.POSITIVE_INFINITY);
  });
});

import { describe, expect, it } from 'vitest';
import {
  collectCallOutcomes,
  compareReplay,
  excerpts,
  replayNormalizer,
} from '../../../src/application/replay/compare-replay.ts';
import type { RunEvent, RunEventInput } from '../../../src/domain/run-events.ts';

const USAGE = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

function stamp(runId: string, ms: number, inputs: readonly RunEventInput[]): RunEvent[] {
  return inputs.map(
    (input, index) =>
      ({ v: 1, ts: new Date(ms + index).toISOString(), run_id: runId, seq: index + 1, ...input }) as RunEvent,
  );
}

function call(step: number, id: string, tool: string): RunEventInput {
  return { kind: 'tool_call', step, call_id: id, tool, arguments: '{}' };
}
function result(step: number, id: string, tool: string, text: string, ms = 5): RunEventInput {
  return { kind: 'tool_result', step, call_id: id, tool, result: text, duration_ms: ms };
}
function end(status: 'succeeded' | 'failed', ms = 100): RunEventInput {
  return {
    kind: 'run_end',
    status,
    payload: status === 'succeeded' ? { summary: 'done' } : null,
    error: status === 'failed' ? { code: 'backend_error', message: 'The replay diverged.' } : null,
    steps: 3,
    usage: USAGE,
    duration_ms: ms,
  };
}

/** read_file, cargo_check, a rejected finish, then an accepted one. */
function run(
  runId: string,
  ms: number,
  texts: { read: string; check: string },
  tail: RunEventInput[] = [end('succeeded')],
): RunEvent[] {
  return stamp(runId, ms, [
    call(1, 'c1', 'read_file'),
    result(1, 'c1', 'read_file', texts.read, ms),
    call(1, 'c2', 'cargo_check'),
    result(1, 'c2', 'cargo_check', texts.check, ms),
    call(2, 'c3', 'finish_task'),
    {
      kind: 'finish_rejected',
      step: 2,
      call_id: 'c3',
      reason: 'invalid_payload',
      message: 'summary is required',
    },
    call(2, 'c4', 'nope'),
    {
      kind: 'tool_error',
      step: 2,
      call_id: 'c4',
      tool: 'nope',
      error: 'There is no tool "nope".',
      reason: 'unknown_tool',
      duration_ms: ms,
    },
    call(3, 'c5', 'finish_task'),
    ...tail,
  ]);
}

const TEXTS = { read: 'pub struct Region;', check: 'cargo check passed (0 warnings).' };

describe('collectCallOutcomes', () => {
  it('gives each tool call its outcome, by step and call order, and takes a run_end with a payload as the accepted finish', () => {
    expect(collectCallOutcomes(run('a', 0, TEXTS)).map((o) => [o.step, o.index, o.tool, o.kind])).toEqual([
      [1, 0, 'read_file', 'result'],
      [1, 1, 'cargo_check', 'result'],
      [2, 0, 'finish_task', 'rejected'],
      [2, 1, 'nope', 'error'],
      [3, 0, 'finish_task', 'accepted'],
    ]);
  });

  it('leaves a call without a logged outcome as none', () => {
    const events = stamp('a', 0, [call(1, 'c1', 'shell')]);
    expect(collectCallOutcomes(events)).toEqual([
      { step: 1, index: 0, call_id: 'c1', tool: 'shell', kind: 'none', text: '' },
    ]);
  });
});

describe('compareReplay', () => {
  it('finds no difference when only timestamps, durations and run ids differ', () => {
    const comparison = compareReplay(run('orig', 0, TEXTS), run('orig.replay', 999_999, TEXTS));
    expect(comparison).toEqual({ identical: true, compared: 5, differences: [] });
  });

  it('reports the step, tool and call id of a tool result that differs, with both texts', () => {
    const changed = { ...TEXTS, read: 'pub struct Region { rects: Vec<Rect> }' };
    const comparison = compareReplay(run('a', 0, TEXTS), run('b', 0, changed));
    expect(comparison.identical).toBe(false);
    expect(comparison.differences).toEqual([
      {
        what: 'tool_result',
        step: 1,
        tool: 'read_file',
        call_id: 'c1',
        original: 'result: pub struct Region;',
        replayed: 'result: pub struct Region { rects: Vec<Rect> }',
      },
    ]);
  });

  it('reports calls the re-run never made, and a different ending', () => {
    const original = run('a', 0, TEXTS);
    const replayed = original.slice(0, 4).concat(stamp('b', 0, [end('failed')]));
    const comparison = compareReplay(original, replayed);
    expect(comparison.differences.map((d) => [d.what, d.step, d.tool])).toEqual([
      ['missing', 2, 'finish_task'],
      ['missing', 2, 'nope'],
      ['missing', 3, 'finish_task'],
      ['status', null, null],
    ]);
    expect(comparison.differences.at(-1)).toMatchObject({
      original: 'succeeded',
      replayed: 'failed (backend_error: The replay diverged.)',
    });
  });

  it('reports calls only the re-run made, and a different payload', () => {
    const original = stamp('a', 0, [
      call(1, 'c1', 'read_file'),
      result(1, 'c1', 'read_file', 'x'),
      end('succeeded'),
    ]);
    const replayed = stamp('b', 0, [
      call(1, 'c1', 'read_file'),
      result(1, 'c1', 'read_file', 'x'),
      call(1, 'c2', 'read_file'),
      result(1, 'c2', 'read_file', 'y'),
      { ...(end('succeeded') as Extract<RunEventInput, { kind: 'run_end' }>), payload: { summary: 'other' } },
    ]);
    const comparison = compareReplay(original, replayed);
    expect(comparison.differences.map((d) => d.what)).toEqual(['extra', 'payload']);
    expect(comparison.differences[0]).toMatchObject({ step: 1, call_id: 'c2', replayed: 'result: y' });
  });

  it('sees a result that became an error even when the text is the same', () => {
    const original = stamp('a', 0, [call(1, 'c1', 'shell'), result(1, 'c1', 'shell', 'boom')]);
    const replayed = stamp('b', 0, [
      call(1, 'c1', 'shell'),
      {
        kind: 'tool_error',
        step: 1,
        call_id: 'c1',
        tool: 'shell',
        error: 'boom',
        reason: 'failed',
        duration_ms: 1,
      },
    ]);
    expect(compareReplay(original, replayed).differences[0]).toMatchObject({
      what: 'tool_result',
      original: 'result: boom',
      replayed: 'error: failed: boom',
    });
  });
});

describe('replayNormalizer', () => {
  it('masks each side’s workspace and run id, durations and timestamps, so a copy in another place compares equal', () => {
    const normalize = replayNormalizer({
      original: { workspace: '/home/me/ws', runId: 'r1' },
      replayed: { workspace: '/tmp/fabric-replay-x/ws', runId: 'r1.replay' },
    });
    const a = normalize(
      '/home/me/ws/src/a.rs: r1 exit code 0 (1.2s) at 2025-01-01T10:00:00.123Z, in 340 ms',
      'original',
    );
    const b = normalize(
      '/tmp/fabric-replay-x/ws/src/a.rs: r1.replay exit code 0 (0.4s) at 2026-02-02T11:11:11.000Z, in 12ms',
      'replayed',
    );
    expect(a).toBe('<workspace>/src/a.rs: <run_id> exit code 0 (<duration>) at <time>, in <duration>');
    expect(b).toBe(a);
    expect(normalize('3 km = 1.864114 mi', 'original')).toBe('3 km = 1.864114 mi');
  });

  it('lets compareReplay ignore a path that only differs by workspace', () => {
    const original = stamp('a', 0, [call(1, 'c1', 'list_files'), result(1, 'c1', 'list_files', '/w1/src')]);
    const replayed = stamp('b', 0, [call(1, 'c1', 'list_files'), result(1, 'c1', 'list_files', '/w2/src')]);
    const normalize = replayNormalizer({
      original: { workspace: '/w1', runId: 'a' },
      replayed: { workspace: '/w2', runId: 'b' },
    });
    expect(compareReplay(original, replayed, normalize).identical).toBe(true);
    expect(compareReplay(original, replayed).identical).toBe(false);
  });
});

describe('excerpts', () => {
  it('cuts both texts to a window around their first difference', () => {
    const same = 'x'.repeat(1000);
    const { original, replayed } = excerpts(`${same}A${same}`, `${same}B${same}`, 100);
    expect(original.startsWith('…')).toBe(true);
    expect(original.endsWith('…')).toBe(true);
    expect(original).toContain('A');
    expect(replayed).toContain('B');
    expect(original.length).toBe(102);
  });
});

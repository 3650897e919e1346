import { describe, expect, it } from 'vitest';
import type { ControlRunRow } from '../../../src/application/control/control-ports.ts';
import { followControlEvents, queuedRunControl } from '../../../src/application/runs/control-events.ts';
import type { ControlRunLookup } from '../../../src/application/runs/run-read-model.ts';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { until } from '../queue/queue-harness.ts';

function event(seq: number, kind: string): RunEvent {
  return { seq, kind } as unknown as RunEvent;
}

/** A control plane holding one run, whose events and status the test writes as a worker would. */
function controlPlane(status = 'running') {
  const state = { status, events: [] as RunEvent[], reads: [] as number[] };
  const store: ControlRunLookup = {
    getRun: async (id) => (id === 'r1' ? ({ id, status: state.status } as unknown as ControlRunRow) : null),
    runEvents: async (_id, after = 0) => {
      state.reads.push(after);
      return state.events.filter((each) => each.seq > after);
    },
  };
  return { state, store };
}

function follow(store: ControlRunLookup, after = 0) {
  const sent: number[] = [];
  let ended = false;
  const stop = followControlEvents(
    store,
    'r1',
    after,
    (each) => sent.push(each.seq),
    () => {
      ended = true;
    },
    1,
  );
  return { sent, stop, isEnded: () => ended };
}

describe('followControlEvents', () => {
  it('sends the events after the last one seen as they come, and ends with run_end', async () => {
    const { state, store } = controlPlane();
    state.events.push(event(1, 'run_start'), event(2, 'model_turn'));
    const follower = follow(store, 1);
    await until('event 2', () => follower.sent.length === 1);
    state.events.push(event(3, 'tool_result'), event(4, 'run_end'));
    await until('the end', () => follower.isEnded());
    expect(follower.sent).toEqual([2, 3, 4]);
    // Each poll asks only for what follows the last event sent.
    expect(state.reads.every((after) => after >= 1)).toBe(true);
    expect(state.reads.at(-1)).toBe(2);
  });

  it('ends when the row says the run will write nothing more, after the last events', async () => {
    const { state, store } = controlPlane();
    state.events.push(event(1, 'run_start'));
    const follower = follow(store);
    await until('event 1', () => follower.sent.length === 1);
    state.status = 'interrupted';
    await until('the end', () => follower.isEnded());
    expect(follower.sent).toEqual([1]);
  });

  it('stops polling when told to', async () => {
    const { state, store } = controlPlane('queued');
    const follower = follow(store);
    await until('a few polls', () => state.reads.length >= 3);
    follower.stop();
    const polls = state.reads.length;
    state.events.push(event(1, 'run_start'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(state.reads.length).toBeLessThanOrEqual(polls + 1);
    expect(follower.isEnded()).toBe(false);
  });
});

describe('queuedRunControl', () => {
  it('is the control plane only when the queue is on and it has the run', async () => {
    const { store } = controlPlane();
    expect(await queuedRunControl({ queueOn: async () => true, control: async () => store }, 'r1')).toBe(
      store,
    );
    expect(
      await queuedRunControl({ queueOn: async () => true, control: async () => store }, 'r2'),
    ).toBeNull();
    expect(
      await queuedRunControl({ queueOn: async () => false, control: async () => store }, 'r1'),
    ).toBeNull();
    expect(await queuedRunControl({ queueOn: async () => true, control: async () => null }, 'r1')).toBeNull();
  });

  it('waits for a gap in the events to fill before going on, in order', async () => {
    const { state, store } = controlPlane();
    state.events.push(event(1, 'run_start'), event(4, 'tool_result'));
    const follower = follow(store);
    await until('event 1', () => follower.sent.length === 1);
    await until('a few polls past the gap', () => state.reads.length > 5);
    expect(follower.sent).toEqual([1]);
    // The backfill writes the lost rows back.
    state.events.push(event(2, 'model_turn'), event(3, 'tool_call'), event(5, 'run_end'));
    state.events.sort((a, b) => a.seq - b.seq);
    await until('the end', () => follower.isEnded());
    expect(follower.sent).toEqual([1, 2, 3, 4, 5]);
  });

  it('goes past a gap that never fills, after a bound', async () => {
    const { state, store } = controlPlane();
    state.events.push(event(1, 'run_start'), event(3, 'run_end'));
    const follower = follow(store);
    await until('the end', () => follower.isEnded());
    expect(follower.sent).toEqual([1, 3]);
  });

  it('waits for a gap as long as a worker holds the run lease, and passes it once none does', async () => {
    const { state, store } = controlPlane();
    let held = true;
    const leased: ControlRunLookup = { ...store, leaseHeld: async () => held };
    state.events.push(event(1, 'run_start'), event(3, 'run_end'));
    const follower = follow(leased);
    await until('event 1', () => follower.sent.length === 1);
    // Far past the bound a store without leases gets (100 polls): the holder still may fill it.
    await until('many polls at the gap', () => state.reads.length > 400);
    expect(follower.sent).toEqual([1]);
    expect(follower.isEnded()).toBe(false);
    held = false;
    await until('the end', () => follower.isEnded());
    expect(follower.sent).toEqual([1, 3]);
  });
});

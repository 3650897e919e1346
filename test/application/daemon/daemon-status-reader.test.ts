import { describe, expect, it } from 'vitest';
import { emptyState, freshRecord } from '../../../src/application/daemon/daemon-state.ts';
import { DaemonStatusReader } from '../../../src/application/daemon/daemon-status-reader.ts';
import { openSpecChange, openSpecTask } from '../../support/daemon-fakes.ts';

function reader(owner: { pid: number | null; host: string | null }, alive: boolean) {
  const state = emptyState('/repo', new Date(0));
  Object.assign(state, owner);
  state.tasks.push(
    Object.assign(freshRecord('a', '1.1', 'A one'), { status: 'running' as const, attempts: 1 }),
  );
  const asked: string[] = [];
  return {
    asked,
    reader: new DaemonStatusReader({
      repos: async () => ['/repo'],
      state: () => ({ load: async () => state }),
      openspec: () => ({
        scan: async () => ({
          changes: [openSpecChange('a', [openSpecTask('1.1', 'A one')])],
          unreadable: [],
        }),
      }),
      isRunning: (o) => {
        asked.push(`${o.pid}@${o.host}`);
        return alive;
      },
    }),
  };
}

describe('DaemonStatusReader', () => {
  it('shows a task running only while the daemon that wrote the state runs', async () => {
    const alive = reader({ pid: 7, host: 'h' }, true);
    const status = await alive.reader.read('/repo');
    expect(status.daemon.running).toBe(true);
    expect(status.changes[0]?.tasks[0]?.status).toBe('running');
    expect(alive.asked).toEqual(['7@h']);

    const gone = await reader({ pid: 7, host: 'h' }, false).reader.read('/repo');
    expect(gone.changes[0]?.tasks[0]?.status).toBe('pending');
  });

  it('asks no liveness of a state with no daemon in it', async () => {
    const none = reader({ pid: null, host: null }, true);
    expect((await none.reader.read('/repo')).daemon.running).toBe(false);
    expect(none.asked).toEqual([]);
    expect(await none.reader.repos()).toEqual(['/repo']);
  });
});

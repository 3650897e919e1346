import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { LocalProcessLiveness } from '../../../src/infrastructure/runlog/process-liveness.ts';

/** The pid of a process that has started and exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await once(child, 'exit');
  if (child.pid === undefined) throw new Error('the child did not start');
  return child.pid;
}

describe('LocalProcessLiveness', () => {
  const now = new Date();

  it('finds a process of this host alive', () => {
    const liveness = new LocalProcessLiveness();
    expect(liveness.host).toBe(hostname());
    expect(liveness.isOwnerAlive({ pid: process.pid, host: hostname() }, now)).toBe(true);
  });

  it('finds a process that has exited gone', async () => {
    const pid = await deadPid();
    expect(new LocalProcessLiveness().isOwnerAlive({ pid, host: hostname() }, now)).toBe(false);
  });

  it('finds a process of another user alive, though it may not signal it', () => {
    // pid 1 always exists: signal 0 succeeds as root and fails with EPERM otherwise.
    expect(new LocalProcessLiveness().isOwnerAlive({ pid: 1, host: hostname() }, now)).toBe(true);
  });

  it('cannot tell for a process of another host', () => {
    const liveness = new LocalProcessLiveness({ host: 'here' });
    expect(liveness.isOwnerAlive({ pid: process.pid, host: 'there' }, now)).toBe('unknown');
  });

  it('finds the owner of a run started before the last boot gone, whatever holds its pid now', () => {
    const liveness = new LocalProcessLiveness({ bootedAt: new Date('2030-01-01T12:00:00Z') });
    const owner = { pid: process.pid, host: hostname() };
    expect(liveness.isOwnerAlive(owner, new Date('2030-01-01T10:00:00Z'))).toBe(false);
    expect(liveness.isOwnerAlive(owner, new Date('2030-01-01T12:30:00Z'))).toBe(true);
  });

  it('never signals a process group: pid 0 and negative pids cannot be told', () => {
    const liveness = new LocalProcessLiveness();
    expect(liveness.isOwnerAlive({ pid: 0, host: hostname() }, now)).toBe('unknown');
    expect(liveness.isOwnerAlive({ pid: -1, host: hostname() }, now)).toBe('unknown');
  });
});

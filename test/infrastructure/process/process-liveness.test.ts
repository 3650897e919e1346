import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { pidState } from '../../../src/infrastructure/process/process-liveness.ts';

describe('pidState', () => {
  it('finds this process alive', () => {
    expect(pidState(process.pid)).toBe('alive');
  });

  it('finds a process that has exited gone', async () => {
    const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
    await once(child, 'exit');
    expect(pidState(child.pid!)).toBe('gone');
  });

  it('finds a process of another user alive, though it may not signal it', () => {
    // pid 1 always exists: signal 0 succeeds as root and fails with EPERM otherwise.
    expect(pidState(1)).toBe('alive');
  });
});

import { describe, expect, it, vi } from 'vitest';
import { ControlMirror } from '../../../src/infrastructure/control/control-mirror.ts';
import { succeededRun, tempRunsDir, writeRunlog } from './fixtures.ts';

describe('ControlMirror', () => {
  it('notes a disabled control plane once and lets the run go on', async () => {
    const onDegraded = vi.fn();
    const mirror = new ControlMirror(null, { onDegraded });
    const events = await writeRunlog(
      await tempRunsDir(),
      'disabled-run',
      '2029-03-01T10:00:00Z',
      succeededRun(),
    );
    expect(() => {
      for (const event of events) mirror.onEvent(event);
      mirror.onText('hello');
      mirror.onToolCallStarted('list_files');
    }).not.toThrow();
    await mirror.close();
    expect(onDegraded).toHaveBeenCalledTimes(1);
    expect(onDegraded.mock.calls[0]?.[0]).toMatch(/disabled \(db_off\)/);
    expect(mirror.stats).toEqual({ written: 0, dropped: 19, degraded: true });
  });

  it('never lets a throwing onDegraded callback reach the loop', async () => {
    const mirror = new ControlMirror(null, {
      onDegraded: () => {
        throw new Error('boom');
      },
    });
    const [first] = await writeRunlog(await tempRunsDir(), 'cb-run', '2029-03-02T10:00:00Z', succeededRun());
    expect(() => mirror.onEvent(first!)).not.toThrow();
    await expect(mirror.flush()).resolves.toBeUndefined();
  });
});

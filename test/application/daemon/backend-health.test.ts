import { describe, expect, it } from 'vitest';
import { markBackendDown, markBackendUp } from '../../../src/application/daemon/backend-health.ts';
import { emptyState } from '../../../src/application/daemon/daemon-state.ts';

describe('backend health', () => {
  it('doubles the wait with each failure in a row, capped, and records the last error', () => {
    const { backend } = emptyState('/repo', new Date(0));
    const waits = [1, 2, 3, 4, 5].map((n) =>
      markBackendDown(backend, `refused ${n}`, { baseMs: 100, capMs: 500 }),
    );
    expect(waits).toEqual([100, 200, 400, 500, 500]);
    expect(backend).toMatchObject({ state: 'down', failures: 5, backoff_s: 0.5, last_error: 'refused 5' });
  });

  it('is up again when a model answers, and says whether it was down', () => {
    const { backend } = emptyState('/repo', new Date(0));
    expect(markBackendUp(backend, new Date('2026-01-01T00:00:00Z'))).toBe(false);
    markBackendDown(backend, 'refused', { baseMs: 100, capMs: 500 });
    expect(markBackendUp(backend, new Date('2026-01-02T00:00:00Z'))).toBe(true);
    expect(backend).toEqual({
      state: 'up',
      last_ok: '2026-01-02T00:00:00.000Z',
      failures: 0,
      backoff_s: 0,
      last_error: null,
    });
  });
});

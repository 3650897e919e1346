import { describe, expect, it } from 'vitest';
import { grownLimit } from '../../../src/application/run/cut-turn.ts';

describe('the output limit after a cut turn (quirks-2 Q12)', () => {
  it('is twice the cut without a window', () => {
    expect(grownLimit(1024, 5000, undefined)).toBe(2048);
  });

  it('stops where the window leaves no room beside the prompt and the cut turn', () => {
    // 8192 - 5000 (prompt) - 1024 (the cut turn, carried back) - 256 (margin) = 1912.
    expect(grownLimit(1024, 5000, 8192)).toBe(1912);
  });

  it('asks for nothing more when the window has no room past the cut', () => {
    expect(grownLimit(1024, 6800, 8192)).toBeUndefined();
    expect(grownLimit(0, 100, 8192)).toBeUndefined();
  });
});

import { describe, expect, it } from 'vitest';
import * as source from '../../src/index.ts';

// The build is a second copy of every class: what a pack gets when it imports another install of
// agent-fabric than the runtime that loads it.
const built = (await import(new URL('../../dist/index.js', import.meta.url).href)) as typeof source;

describe('errors keep one identity across copies of the package', () => {
  it('recognises a ToolError thrown by another copy as a ToolError, with its security event', () => {
    expect(built.ToolError).not.toBe(source.ToolError);
    const error = new built.ToolError('refused', {
      securityEvent: { eventType: 'sandbox_violation', rule: 'r' },
    });
    expect(error instanceof source.ToolError).toBe(true);
    expect(error instanceof source.FabricError).toBe(false);
    expect(error.securityEvent?.rule).toBe('r');
  });

  it('recognises a FabricError of another copy, and keeps plain errors and subclasses apart', () => {
    expect(new built.FabricError('usage', 'x') instanceof source.FabricError).toBe(true);
    expect(new Error('x') instanceof source.ToolError).toBe(false);
    class Narrow extends source.ToolError {}
    expect(new Narrow('x') instanceof source.ToolError).toBe(true);
    expect(new source.ToolError('x') instanceof Narrow).toBe(false);
  });
});

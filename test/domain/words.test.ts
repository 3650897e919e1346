import { describe, expect, it } from 'vitest';
import { closestName, didYouMean, plural } from '../../src/domain/words.ts';

describe('plural', () => {
  it('uses the singular for exactly one and the plural otherwise', () => {
    expect(plural(1, 'step')).toBe('1 step');
    expect(plural(0, 'step')).toBe('0 steps');
    expect(plural(9, 'test')).toBe('9 tests');
    expect(plural(2, 'attempt')).toBe('2 attempts');
    expect(plural(3, 'repository', 'repositories')).toBe('3 repositories');
  });
});

describe('closestName', () => {
  it('suggests the name one edit away, a transposition included', () => {
    expect(closestName('--max-step', ['--max-steps', '--model', '--json'])).toBe('--max-steps');
    expect(closestName('mdoel', ['model', 'workspace'])).toBe('model');
    expect(closestName('maxSteps', ['max_steps', 'task'])).toBe('max_steps');
  });

  it('ignores case and suggests nothing for a name far from all', () => {
    expect(closestName('RUN', ['run', 'runs'])).toBe('run');
    expect(closestName('frobnicate', ['run', 'serve', 'daemon'])).toBeUndefined();
    expect(closestName('x', [])).toBeUndefined();
  });

  it('writes a ready-to-append sentence, or nothing', () => {
    expect(didYouMean('speciaist', ['specialist'])).toBe(' Did you mean "specialist"?');
    expect(didYouMean('zzz', ['specialist'])).toBe('');
  });
});

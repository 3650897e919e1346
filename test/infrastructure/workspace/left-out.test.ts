import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLeftOut } from '../../../src/infrastructure/workspace/left-out.ts';

const root = '/work/space';
const at = (...parts: string[]) => join(root, ...parts);

describe('what a workspace copy leaves out', () => {
  it('leaves out target/ at the root only', () => {
    expect(isLeftOut(root, at('target'))).toBe(true);
    expect(isLeftOut(root, at('crates', 'a', 'target'))).toBe(false);
    expect(isLeftOut(root, at('src', 'target.rs'))).toBe(false);
  });

  it('leaves out .git anywhere, unless told to keep it', () => {
    expect(isLeftOut(root, at('.git'))).toBe(true);
    expect(isLeftOut(root, at('vendor', 'dep', '.git'))).toBe(true);
    expect(isLeftOut(root, at('.git'), { keepGit: true })).toBe(false);
    expect(isLeftOut(root, at('target'), { keepGit: true })).toBe(true);
  });

  it('leaves out the paths it is given and everything under them', () => {
    const paths = [at('runs')];
    expect(isLeftOut(root, at('runs'), { paths })).toBe(true);
    expect(isLeftOut(root, at('runs', 'r1', 'runlog.jsonl'), { paths })).toBe(true);
    expect(isLeftOut(root, at('runs-old'), { paths })).toBe(false);
    expect(isLeftOut(root, at('src', 'main.rs'), { paths })).toBe(false);
  });
});

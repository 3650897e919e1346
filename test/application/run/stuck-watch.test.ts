import { describe, expect, it } from 'vitest';
import { StuckWatch } from '../../../src/application/run/stuck-watch.ts';

const read = (path: string, result = 'fn main() {}') => ({
  name: 'read_file',
  arguments: JSON.stringify({ path }),
  result,
});

describe('StuckWatch (SPEC §17)', () => {
  it('sees the same call, arguments and result four times in a row, however the arguments are spaced', () => {
    const watch = new StuckWatch();
    expect(watch.observe([read('a.rs')])).toBeNull();
    expect(watch.observe([{ ...read('a.rs'), arguments: '{ "path" : "a.rs" }' }])).toBeNull();
    expect(watch.observe([read('a.rs')])).toBeNull();
    expect(watch.observe([read('a.rs')])).toEqual({ pattern: 'repeat', calls: ['read_file'], repeats: 4 });
  });

  it('does not count a call whose result changed (a cargo_check after an edit)', () => {
    const watch = new StuckWatch();
    const check = (output: string) => ({ name: 'cargo_check', arguments: '{}', result: output });
    for (const output of ['1 error', '1 error', '1 error']) expect(watch.observe([check(output)])).toBeNull();
    expect(watch.observe([check('0 errors')])).toBeNull();
    expect(watch.observe([check('0 errors'), check('0 errors')])).toBeNull();
    expect(watch.observe([check('0 errors')])).toMatchObject({ pattern: 'repeat' });
  });

  it('sees two calls alternating four times each, and not two different reads in turn once', () => {
    const watch = new StuckWatch();
    const pairs = [read('a.rs'), { ...read('b.rs'), result: 'mod b;' }];
    for (let i = 0; i < 7; i++) expect(watch.observe([pairs[i % 2]!])).toBeNull();
    expect(watch.observe([pairs[1]!])).toEqual({
      pattern: 'alternate',
      calls: ['read_file', 'read_file'],
      repeats: 4,
    });
  });

  it('starts counting afresh after a reset, and takes its threshold from the config', () => {
    const watch = new StuckWatch(2);
    expect(watch.observe([read('a.rs'), read('a.rs')])).toMatchObject({ pattern: 'repeat', repeats: 2 });
    watch.reset();
    expect(watch.observe([read('a.rs')])).toBeNull();
  });
});

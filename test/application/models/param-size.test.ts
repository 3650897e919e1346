import { describe, expect, it } from 'vitest';
import { parseParamSize } from '../../../src/application/models/param-size.ts';

describe('parseParamSize', () => {
  it.each([
    ['8.0B', 8],
    ['7B', 7],
    ['70.6B', 70.6],
    ['566.70M', 0.5667],
    ['137M', 0.137],
    ['8x7B', 56],
    ['26B-A4B', 26],
    ['1.5b', 1.5],
    ['125K', 0.000125],
    ['1T', 1000],
  ])('reads %s as %s billion parameters', (text, billions) => {
    expect(parseParamSize(text)).toBeCloseTo(billions, 9);
  });

  it.each([[''], [undefined], [null], ['unknown'], ['7Billion'], ['B7']])(
    'treats %s as unknown rather than guessing',
    (text) => {
      expect(parseParamSize(text)).toBeUndefined();
    },
  );
});

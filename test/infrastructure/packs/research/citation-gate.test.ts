import { describe, expect, it } from 'vitest';
import { checkCitations } from '../../../../src/infrastructure/packs/research/citation-gate.ts';
import {
  FetchLedger,
  normaliseText,
  normaliseUrl,
} from '../../../../src/infrastructure/packs/research/fetch-ledger.ts';

function ledger(): FetchLedger {
  const fetched = new FetchLedger();
  fetched.record({
    requestedUrl: 'http://example.test/old',
    finalUrl: 'https://example.test/docs/page/',
    title: 'Docs',
    text: 'The quick brown fox\n\njumps over the “lazy” dog — twice a day.',
  });
  return fetched;
}

describe('checkCitations', () => {
  it('accepts an exact quote of a fetched page, by its final or its requested URL', () => {
    const citations = [
      { url: 'https://EXAMPLE.test/docs/page#intro', title: 'Docs', quote: 'the quick brown fox jumps' },
      { url: 'http://example.test/old', title: 'Docs', quote: '"jumps over the "lazy" dog - twice"' },
    ];
    expect(checkCitations(citations, ledger(), 4)).toEqual({ ok: true });
  });

  it('accepts a finish without citations', () => {
    expect(checkCitations([], ledger(), 4)).toEqual({ ok: true });
  });

  it('rejects a URL that was not fetched and names the citation and the fetched pages', () => {
    const result = checkCitations(
      [{ url: 'https://other.test/', title: 'x', quote: 'the quick brown fox' }],
      ledger(),
      4,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.message).toContain(
      'citations[0] (https://other.test/): this URL was not fetched in this run',
    );
    expect(result.message).toContain('Pages fetched in this run: https://example.test/docs/page/');
  });

  it('rejects a made-up quote and a quote that is too short', () => {
    const result = checkCitations(
      [
        { url: 'https://example.test/docs/page', title: 'Docs', quote: 'the slow red fox sleeps all day' },
        { url: 'https://example.test/docs/page', title: 'Docs', quote: 'brown fox' },
      ],
      ledger(),
      4,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.message).toContain('2 of 2 citations failed');
    expect(result.message).toMatch(/citations\[0\].*does not appear in the text fetched/);
    expect(result.message).toMatch(/citations\[1\].*has 2 words; quote at least 4 consecutive words/);
  });
});

describe('normalisation', () => {
  it('compares URLs without fragment, trailing slash or case differences in the host', () => {
    expect(normaliseUrl('HTTPS://Example.test:443/a/b/#x')).toBe('https://example.test/a/b');
    expect(normaliseUrl('https://example.test')).toBe('https://example.test/');
    expect(normaliseUrl('not a url')).toBeUndefined();
  });

  it('compares text without case, typography or whitespace differences', () => {
    expect(normaliseText('  It’s “Quoted”\n\t—  Here ')).toBe(`it's "quoted" - here`);
  });
});

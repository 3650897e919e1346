/**
 * The research pack's finish gate: every citation points at a page fetched in this run, and its
 * quote appears in that page. A rejection names each failing citation and what to do about it.
 */
import type { GateResult } from '../../../application/ports.ts';
import { type FetchLedger, normaliseText } from './fetch-ledger.ts';
import { plural } from '../../../domain/words.ts';

/** A citation as the finish schema defines it. */
export interface Citation {
  readonly url: string;
  readonly title: string;
  readonly quote: string;
}

/** Checks every citation against the pages fetched in this run. */
export function checkCitations(
  citations: readonly Citation[],
  ledger: FetchLedger,
  minQuoteWords: number,
): GateResult {
  const problems: string[] = [];
  for (const [index, citation] of citations.entries()) {
    const problem = citationProblem(citation, ledger, minQuoteWords);
    if (problem !== undefined) problems.push(`- citations[${index}] (${citation.url}): ${problem}`);
  }
  if (problems.length === 0) return { ok: true };
  const fetched = ledger.urls();
  const fetchedLine =
    fetched.length === 0
      ? 'No page has been fetched in this run yet.'
      : `Pages fetched in this run: ${fetched.slice(0, 20).join(', ')}.`;
  return {
    ok: false,
    message: [
      `finish_task was not accepted: ${problems.length} of ${citations.length} citations failed the check.`,
      ...problems,
      fetchedLine,
      'Fix or remove those citations (fetch the page with fetch_url, or quote it word for word), then call finish_task again.',
    ].join('\n'),
  };
}

function citationProblem(citation: Citation, ledger: FetchLedger, minQuoteWords: number): string | undefined {
  const entry = ledger.find(citation.url);
  if (entry === undefined) {
    return 'this URL was not fetched in this run. Fetch it with fetch_url first, or cite a page you did fetch.';
  }
  const quote = normaliseText(citation.quote).replace(/^["'\s]+|["'\s]+$/g, '');
  const trimmed = quote.replace(/^(\.\.\.|…)\s*|\s*(\.\.\.|…)$/g, '');
  const words = trimmed.split(' ').filter((word) => /[\p{L}\p{N}]/u.test(word)).length;
  if (words < minQuoteWords) {
    return `the quote has ${plural(words, 'word')}; quote at least ${plural(minQuoteWords, 'consecutive word')} from the page.`;
  }
  if (!entry.normalisedText.includes(trimmed)) {
    return (
      'the quote does not appear in the text fetched from that page. Copy one contiguous passage exactly ' +
      'as fetch_url returned it (no paraphrase, no "..." joining separate parts).'
    );
  }
  return undefined;
}

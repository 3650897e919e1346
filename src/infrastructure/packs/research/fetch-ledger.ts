/**
 * What this run fetched: the per-run record the finish gate checks citations against. It lives
 * in the pack instance, and every `getPack` builds a fresh pack, so runs never share it.
 */

/** A page `fetch_url` returned to the model. */
export interface FetchedPage {
  readonly requestedUrl: string;
  readonly finalUrl: string;
  readonly title: string;
  readonly text: string;
}

/** Fetched pages, found by requested or final (post-redirect) URL. */
export class FetchLedger {
  readonly #byUrl = new Map<string, { page: FetchedPage; normalisedText: string }>();

  record(page: FetchedPage): void {
    const entry = { page, normalisedText: normaliseText(`${page.title}\n${page.text}`) };
    for (const url of [page.requestedUrl, page.finalUrl]) {
      const key = normaliseUrl(url);
      if (key !== undefined) this.#byUrl.set(key, entry);
    }
  }

  /** The page fetched from `url`, if any, with its text normalised for quote matching. */
  find(url: string): { page: FetchedPage; normalisedText: string } | undefined {
    const key = normaliseUrl(url);
    return key === undefined ? undefined : this.#byUrl.get(key);
  }

  /** The distinct final URLs fetched so far, in order. */
  urls(): readonly string[] {
    return [...new Set([...this.#byUrl.values()].map((entry) => entry.page.finalUrl))];
  }
}

/**
 * A URL in comparable form: WHATWG-normalised (scheme and host case, default port, percent
 * encoding), without the fragment and without a trailing slash on a non-root path.
 */
export function normaliseUrl(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url.trim());
  } catch {
    return undefined;
  }
  parsed.hash = '';
  if (parsed.pathname.length > 1 && parsed.pathname.endsWith('/')) {
    parsed.pathname = parsed.pathname.replace(/\/+$/, '');
  }
  return parsed.href;
}

/** Text in comparable form: Unicode-compatible, lower case, typographic quotes and dashes plain, one space between words. */
export function normaliseText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019\u201a\u201b\u2032]/g, "'")
    .replace(/[\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb]/g, '"')
    .replace(/[\u2010-\u2015\u2212]/g, '-')
    .replace(/\s+/g, ' ')
    .trim();
}

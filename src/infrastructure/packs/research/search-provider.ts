/**
 * The one small port behind `web_search`. SearXNG is the built-in provider; another search API
 * is one class implementing `SearchProvider`, nothing else changes.
 */

/** One search hit, kept compact so a page of results fits a small model's context. */
export interface SearchResult {
  readonly title: string;
  readonly url: string;
  readonly snippet: string;
}

/** What a search is asked for. */
export interface SearchRequest {
  readonly query: string;
  /** At most this many results come back. */
  readonly count: number;
  readonly signal: AbortSignal;
}

/** A web search backend. Throws `ToolError` with a message the model can act on. */
export interface SearchProvider {
  readonly name: string;
  search(request: SearchRequest): Promise<readonly SearchResult[]>;
}

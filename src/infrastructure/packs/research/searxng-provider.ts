/**
 * `SearchProvider` for a SearXNG-compatible JSON API: `GET <base>/search?q=...&format=json`.
 * The endpoint is operator configuration (SEARXNG_URL), not model input, so it is reached with
 * plain `fetch`, bounded in time and size.
 */
import { errorMessage, ToolError } from '../../../domain/errors.ts';
import type { SearchProvider, SearchRequest, SearchResult } from './search-provider.ts';

const MAX_TITLE_CHARS = 200;
const MAX_SNIPPET_CHARS = 300;

/** Searches a SearXNG instance. */
export class SearxngSearchProvider implements SearchProvider {
  readonly name = 'searxng';
  readonly #endpoint: string;
  readonly #timeoutMs: number;
  readonly #maxBytes: number;

  constructor(options: { baseUrl: string; timeoutMs: number; maxBytes?: number }) {
    const base = options.baseUrl.replace(/\/+$/, '');
    this.#endpoint = base.endsWith('/search') ? base : `${base}/search`;
    this.#timeoutMs = options.timeoutMs;
    this.#maxBytes = options.maxBytes ?? 1024 * 1024;
  }

  async search(request: SearchRequest): Promise<readonly SearchResult[]> {
    const url = new URL(this.#endpoint);
    url.searchParams.set('q', request.query);
    url.searchParams.set('format', 'json');
    const signal = AbortSignal.any([request.signal, AbortSignal.timeout(this.#timeoutMs)]);
    let text: string;
    try {
      const response = await fetch(url, { signal, headers: { accept: 'application/json' } });
      if (!response.ok) {
        await response.body?.cancel();
        throw new ToolError(
          `The search endpoint ${this.#endpoint} answered HTTP ${response.status}.` +
            (response.status === 403 ? ' SearXNG needs "json" in search.formats of its settings.yml.' : ''),
        );
      }
      text = await readBounded(response, this.#maxBytes);
    } catch (error) {
      if (error instanceof ToolError) throw error;
      const reason = signal.aborted ? `no answer within ${this.#timeoutMs} ms` : errorMessage(error);
      throw new ToolError(
        `Could not reach the search endpoint ${this.#endpoint} (${reason}). Check SEARXNG_URL.`,
        { cause: error },
      );
    }
    return parseResults(text, request.count);
  }
}

/** Maps SearXNG's `results` to compact hits: http(s) URLs only, de-duplicated, clipped. */
export function parseResults(text: string, count: number): readonly SearchResult[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (cause) {
    throw new ToolError('The search endpoint did not answer JSON; is it a SearXNG instance?', { cause });
  }
  const raw = (body as { results?: unknown }).results;
  if (!Array.isArray(raw)) throw new ToolError('The search endpoint answered without a "results" list.');
  const seen = new Set<string>();
  const results: SearchResult[] = [];
  for (const entry of raw as unknown[]) {
    if (results.length >= count) break;
    const { url, title, content } = (entry ?? {}) as Record<string, unknown>;
    if (typeof url !== 'string' || !/^https?:\/\//i.test(url) || seen.has(url)) continue;
    seen.add(url);
    results.push({
      url,
      title: clip(typeof title === 'string' && title.trim() !== '' ? title : url, MAX_TITLE_CHARS),
      snippet: clip(typeof content === 'string' ? content : '', MAX_SNIPPET_CHARS),
    });
  }
  return results;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

async function readBounded(response: Response, maxBytes: number): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ToolError(`The search endpoint's answer is larger than ${maxBytes} bytes.`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return new TextDecoder().decode(all);
}

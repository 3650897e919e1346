import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../../../src/domain/errors.ts';
import {
  parseResults,
  SearxngSearchProvider,
} from '../../../../src/infrastructure/packs/research/searxng-provider.ts';
import { type LocalServer, startLocalServer } from '../../net/local-server.ts';

let server: LocalServer;
const signal = new AbortController().signal;

beforeAll(async () => {
  server = await startLocalServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const mode = url.pathname.split('/')[1];
    if (mode === 'forbidden') return void response.writeHead(403).end();
    if (mode === 'html')
      return void response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
    if (mode === 'silent') return;
    const results = [{ title: 'A', url: 'https://a.test/', content: 'about a' }];
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
  });
});

afterAll(() => server.close());

const search = (path: string, timeoutMs = 2000) =>
  new SearxngSearchProvider({ baseUrl: `${server.origin}${path}`, timeoutMs }).search({
    query: 'q',
    count: 5,
    signal,
  });

describe('SearxngSearchProvider', () => {
  it('asks <base>/search with format=json, whether or not the base ends in /search', async () => {
    expect(await search('/ok/')).toEqual([{ title: 'A', url: 'https://a.test/', snippet: 'about a' }]);
    expect(await search('/ok/search')).toHaveLength(1);
    expect(server.requests.slice(-2).map((request) => request.url)).toEqual([
      '/ok/search?q=q&format=json',
      '/ok/search?q=q&format=json',
    ]);
  });

  it('explains a 403 (JSON format disabled), a non-JSON answer, a timeout and an unreachable endpoint', async () => {
    await expect(search('/forbidden')).rejects.toThrow(/HTTP 403.*search\.formats/);
    await expect(search('/html')).rejects.toThrow(/did not answer JSON/);
    await expect(search('/silent', 200)).rejects.toThrow(/no answer within 200 ms.*SEARXNG_URL/);
    const gone = await startLocalServer(() => {});
    await gone.close();
    const unreachable = new SearxngSearchProvider({ baseUrl: gone.origin, timeoutMs: 2000 });
    const error = await unreachable
      .search({ query: 'q', count: 1, signal })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolError);
    expect((error as ToolError).message).toMatch(/Could not reach the search endpoint.*Check SEARXNG_URL/);
  });
});

describe('parseResults', () => {
  it('keeps http(s) results only, de-duplicated, clipped and bounded', () => {
    const text = JSON.stringify({
      results: [
        { title: '  Spaced\n title ', url: 'https://a.test/', content: 'x'.repeat(1000) },
        { title: 'dup', url: 'https://a.test/' },
        { title: 'js', url: 'javascript:alert(1)' },
        { url: 'https://b.test/' },
        { title: 'c', url: 'https://c.test/' },
      ],
    });
    const results = parseResults(text, 2);
    expect(results).toHaveLength(2);
    expect(results[0]?.title).toBe('Spaced title');
    expect(results[0]?.snippet.length).toBeLessThanOrEqual(300);
    expect(results[1]).toEqual({ title: 'https://b.test/', url: 'https://b.test/', snippet: '' });
  });

  it('refuses an answer without a results list', () => {
    expect(() => parseResults('{"answers": []}', 5)).toThrow(/without a "results" list/);
  });
});

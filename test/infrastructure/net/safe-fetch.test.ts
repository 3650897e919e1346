import { brotliCompressSync, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolError } from '../../../src/domain/errors.ts';
import { DnsHostResolver } from '../../../src/infrastructure/net/dns-resolver.ts';
import { nodePinnedRequester } from '../../../src/infrastructure/net/pinned-request.ts';
import {
  type PinnedRequester,
  safeFetch,
  type SafeFetchOptions,
} from '../../../src/infrastructure/net/safe-fetch.ts';
import type { HostResolver } from '../../../src/infrastructure/net/ssrf-guard.ts';
import { type LocalServer, startLocalServer } from './local-server.ts';

const MB = 1024 * 1024;
// 64 MB of zeros compresses to ~64 kB: the bomb.
const GZIP_BOMB = gzipSync(Buffer.alloc(64 * MB));
const PAGE = '<html><head><title>T</title></head><body><p>hello from the test server</p></body></html>';

let server: LocalServer;

beforeAll(async () => {
  server = await startLocalServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    const port = server.port;
    switch (url.pathname) {
      case '/page':
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
        return;
      case '/hop': {
        const left = Number(url.searchParams.get('n') ?? '0');
        const next = left > 0 ? `/hop?n=${left - 1}` : '/page';
        response.writeHead(302, { location: next }).end();
        return;
      }
      case '/to-loopback-2':
        response.writeHead(301, { location: `http://127.0.0.2:${port}/page` }).end();
        return;
      case '/to-metadata':
        response.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
        return;
      case '/to-file':
        response.writeHead(302, { location: 'file:///etc/passwd' }).end();
        return;
      case '/bomb':
        response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip' }).end(GZIP_BOMB);
        return;
      case '/encoded': {
        const encoding = url.searchParams.get('e') ?? '';
        const body = Buffer.from('compressed hello');
        const encoders: Record<string, (b: Buffer) => Buffer> = {
          gzip: gzipSync,
          deflate: deflateSync,
          br: brotliCompressSync,
        };
        const raw = url.searchParams.get('raw') === '1';
        const encoded = raw ? deflateRawSync(body) : (encoders[encoding]?.(body) ?? body);
        response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': encoding }).end(encoded);
        return;
      }
      case '/huge': {
        response.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(64 * 1024, 'a');
        const write = (): void => {
          while (!response.destroyed && response.write(chunk)) {}
          if (!response.destroyed) response.once('drain', write);
        };
        response.on('close', () => response.removeAllListeners('drain'));
        write();
        return;
      }
      case '/silent':
        return; // never answers
      case '/slow-body':
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('first bytes, then nothing');
        return;
      case '/pdf':
        response.writeHead(200, { 'content-type': 'application/pdf' }).end(Buffer.alloc(MB));
        return;
      case '/missing':
        response.writeHead(404, { 'content-type': 'text/plain' }).end('nope');
        return;
      case '/host':
        response.writeHead(200, { 'content-type': 'text/plain' }).end(`host=${request.headers.host}`);
        return;
      default:
        response.writeHead(500).end();
    }
  });
});

afterAll(async () => {
  await server.close();
});

/** Wraps the real requester and records where each request went. */
function spyRequester(): PinnedRequester & { calls: string[] } {
  const calls: string[] = [];
  const requester = (async (target, options) => {
    // Belt and braces: a test must never send traffic beyond loopback.
    if (!target.address.address.startsWith('127.'))
      throw new Error(`test tried to reach ${target.address.address}`);
    calls.push(`${target.address.address} ${target.url.href}`);
    return nodePinnedRequester(target, options);
  }) as PinnedRequester & { calls: string[] };
  requester.calls = calls;
  return requester;
}

function options(overrides: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return {
    policy: { allowedHosts: [server.hostPort] },
    resolver: new DnsHostResolver(),
    requester: spyRequester(),
    maxRedirects: 5,
    maxBytes: 2 * MB,
    timeoutMs: 5000,
    ...overrides,
  };
}

async function failure(promise: Promise<unknown>): Promise<ToolError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ToolError);
  return error as ToolError;
}

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

describe('safeFetch', () => {
  it('fetches an allowlisted loopback page', async () => {
    const result = await safeFetch(`${server.origin}/page`, options());
    expect(result).toMatchObject({ status: 200, finalUrl: `${server.origin}/page`, truncated: false });
    expect(text(result.bytes)).toBe(PAGE);
  });

  it('refuses the same loopback server when it is not allowlisted, without a request', async () => {
    const before = server.requests.length;
    const error = await failure(
      safeFetch(`${server.origin}/page`, options({ policy: { allowedHosts: [] } })),
    );
    expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule: 'loopback_address' });
    expect(server.requests.length).toBe(before);
  });

  it('follows up to five redirects by hand and reports every hop', async () => {
    const result = await safeFetch(`${server.origin}/hop?n=3`, options());
    expect(result.finalUrl).toBe(`${server.origin}/page`);
    expect(result.hops).toHaveLength(5);
    expect(result.requestedUrl).toBe(`${server.origin}/hop?n=3`);
  });

  it('stops after five redirects', async () => {
    const error = await failure(safeFetch(`${server.origin}/hop?n=5`, options()));
    expect(error.message).toMatch(/redirected more than 5 times/);
  });

  it.each([
    ['/to-loopback-2', 'loopback_address', '127.0.0.2'],
    ['/to-metadata', 'cloud_metadata_address', '169.254.169.254'],
    ['/to-file', 'scheme_not_allowed', 'file:'],
  ])('refuses a redirect (%s) to a forbidden target before connecting to it', async (path, rule, where) => {
    const requester = spyRequester();
    const error = await failure(safeFetch(`${server.origin}${path}`, options({ requester })));
    expect(error.securityEvent).toMatchObject({ eventType: 'ssrf_blocked', rule });
    expect(String(error.securityEvent?.requested)).toContain(where);
    expect(requester.calls).toEqual([`127.0.0.1 ${server.origin}${path}`]);
  });

  it('stops a gzip bomb at the decompressed size limit', async () => {
    const started = Date.now();
    const result = await safeFetch(`${server.origin}/bomb`, options({ maxBytes: MB }));
    expect(result.truncated).toBe(true);
    expect(result.bytes.length).toBe(MB);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it.each([['gzip'], ['deflate'], ['br']])('decodes a %s body', async (encoding) => {
    const result = await safeFetch(`${server.origin}/encoded?e=${encoding}`, options());
    expect(text(result.bytes)).toBe('compressed hello');
  });

  it('decodes raw deflate sent as "deflate"', async () => {
    const result = await safeFetch(`${server.origin}/encoded?e=deflate&raw=1`, options());
    expect(text(result.bytes)).toBe('compressed hello');
  });

  it('refuses an unknown content encoding', async () => {
    const error = await failure(safeFetch(`${server.origin}/encoded?e=compress`, options()));
    expect(error.message).toMatch(/unsupported Content-Encoding "compress"/);
  });

  it('cuts an endless body at the size limit', async () => {
    const result = await safeFetch(`${server.origin}/huge`, options({ maxBytes: 256 * 1024 }));
    expect(result.truncated).toBe(true);
    expect(result.bytes.length).toBe(256 * 1024);
  });

  it('gives up on a server that never answers, and on a body that stalls', async () => {
    for (const path of ['/silent', '/slow-body']) {
      const error = await failure(safeFetch(`${server.origin}${path}`, options({ timeoutMs: 300 })));
      expect(error.message).toMatch(/took longer than 300 ms/);
    }
  });

  it('refuses an unreadable content type before downloading it', async () => {
    const accept = (type: string): string | undefined =>
      type.startsWith('text/') ? undefined : `no ${type}`;
    const error = await failure(safeFetch(`${server.origin}/pdf`, options({ accept })));
    expect(error.message).toBe('no application/pdf');
  });

  it('reports an HTTP error status', async () => {
    const error = await failure(safeFetch(`${server.origin}/missing`, options()));
    expect(error.message).toMatch(/answered HTTP 404/);
  });

  it('connects to the checked address without resolving again, keeping the name in Host', async () => {
    const asked: string[] = [];
    const resolver: HostResolver = {
      async resolve(hostname) {
        asked.push(hostname);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    };
    const hostPort = `pinned.test:${server.port}`;
    const result = await safeFetch(
      `http://${hostPort}/host`,
      options({ resolver, policy: { allowedHosts: [hostPort] } }),
    );
    expect(text(result.bytes)).toBe(`host=${hostPort}`);
    expect(asked).toEqual(['pinned.test']);
  });
});

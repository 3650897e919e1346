import type { MiddlewareHandler } from 'hono';
import { ApiError } from './api-error.ts';
import { VIEWER_ACTION_HEADER, hasViewerCookie, isViewerAction } from './viewer/viewer-cookie.ts';

/** What the auth middleware tells the routes. */
export interface AuthVariables {
  /** True when no token is configured, or the request carried the right one. */
  readonly authorized: boolean;
}

/** True for a host name that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127(?:\.\d{1,3}){3}$/.test(bare);
}

/**
 * Requires `Authorization: Bearer <token>` on every route but `GET /v1/health` when a token is
 * set; health answers everyone, and says more to a caller with the token.
 */
export function bearerAuth(token: string | undefined): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    if (token === undefined) {
      c.set('authorized', true);
      return next();
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '');
    // The run viewer's cookie stands for the header on reads (its page's EventSource, downloads).
    const authorized =
      (match?.[1] !== undefined && (await sameSecret(match[1], token))) ||
      (await hasViewerCookie(
        c.req.method,
        c.req.header('cookie'),
        token,
        isViewerAction(c.req.method, c.req.path, c.req.header(VIEWER_ACTION_HEADER)),
      ));
    c.set('authorized', authorized);
    if (authorized || (c.req.method === 'GET' && c.req.path === '/v1/health')) return next();
    c.header('WWW-Authenticate', 'Bearer realm="agent-fabric"');
    throw new ApiError(
      'unauthorized',
      'This server requires Authorization: Bearer <token> (FABRIC_API_TOKEN).',
    );
  };
}

/**
 * Refuses what a web page could send to a server on this machine: a Host that is not loopback
 * while the server listens on loopback (DNS rebinding), and a cross-origin `Origin`.
 */
export function originGuard(loopbackOnly: boolean): MiddlewareHandler {
  return async (c, next) => {
    const url = new URL(c.req.url);
    if (loopbackOnly && !isLoopbackHost(url.hostname))
      throw new ApiError(
        'forbidden',
        `Host "${url.hostname}" is not this machine; use 127.0.0.1 or localhost.`,
      );
    const origin = c.req.header('origin');
    if (origin !== undefined && hostOf(origin) !== url.host)
      throw new ApiError('forbidden', `Cross-origin requests (from ${origin}) are not accepted.`);
    return next();
  };
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // `Origin: null` (a sandboxed page, a file) is never this server.
  }
}

/** Compares two secrets in time that depends on neither: both are hashed, then every byte is compared. */
export async function sameSecret(given: string, expected: string): Promise<boolean> {
  const encoder = new TextEncoder();
  const [a, b] = await Promise.all([
    crypto.subtle.digest('SHA-256', encoder.encode(given)),
    crypto.subtle.digest('SHA-256', encoder.encode(expected)),
  ]);
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  let difference = 0;
  for (let i = 0; i < x.length; i += 1) difference |= (x[i] ?? 0) ^ (y[i] ?? 0);
  return difference === 0;
}

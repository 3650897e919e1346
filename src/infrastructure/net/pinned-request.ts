/**
 * The Node adapter of `PinnedRequester`: one GET with node:http/https that connects to the
 * address the SSRF guard already checked. A custom `lookup` hands that address to the socket,
 * so no second DNS resolution happens, while Host and TLS SNI keep the original name.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { setImmediate } from 'node:timers';
import { ToolError } from '../../domain/errors.ts';
import { collectBoundedBody } from './bounded-body.ts';
import { isIpAddress } from './ip-address.ts';
import type { PinnedRequester, PinnedResponse } from './safe-fetch.ts';
import type { CheckedTarget } from './ssrf-guard.ts';

/** Sends one GET to the checked address of `target`; redirects are the caller's business. */
export const nodePinnedRequester: PinnedRequester = (target, options) =>
  new Promise<PinnedResponse>((resolve, reject) => {
    const { signal } = options;
    const send = target.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.url.pathname}${target.url.search}`,
        method: 'GET',
        headers: options.headers,
        lookup: pinnedLookup(target),
        // A fresh socket per request: a pooled one could have been opened for another address.
        agent: false,
        signal,
        ...(isIpAddress(target.hostname) ? {} : { servername: target.hostname }),
      },
      (response) => resolve(wrapResponse(response, signal)),
    );
    request.on('error', (error) => {
      if (signal.aborted) {
        reject(new ToolError(`Fetching ${target.url.href} timed out or was cancelled.`, { cause: error }));
        return;
      }
      reject(connectFailed(target, error));
    });
    request.end();
  });

/** What a socket error code means, in words the model can act on. */
const CONNECT_ERRORS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'the connection was refused',
  ECONNRESET: 'the connection was reset',
  ENETUNREACH: 'the network is unreachable from here',
  EHOSTUNREACH: 'the host is unreachable from here',
  EADDRNOTAVAIL: 'no route to that address from here',
  EINVAL: 'the route to that address is blocked',
  EACCES: 'the route to that address is prohibited',
  EPERM: 'the connection is not permitted here',
  ETIMEDOUT: 'the connection timed out',
  EPIPE: 'the connection was closed',
  ECONNABORTED: 'the connection was aborted',
  EPROTO: 'the TLS handshake failed',
  ERR_TLS_CERT_ALTNAME_INVALID: 'its TLS certificate is not valid for that name',
  CERT_HAS_EXPIRED: 'its TLS certificate has expired',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'its TLS certificate is self-signed',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'its TLS certificate cannot be verified',
  HPE_INVALID_CONSTANT: 'it did not answer with HTTP',
};

/** Every network failure becomes a tool error the model reads; none may escape as a crash. */
function connectFailed(target: CheckedTarget, error: Error): ToolError {
  const code = (error as { code?: string }).code ?? '';
  const meaning = CONNECT_ERRORS[code] ?? error.message;
  return new ToolError(
    `Could not fetch ${target.url.href} (${target.address.address}): ${meaning}${code === '' ? '' : ` (${code})`}. ` +
      'Try another source.',
    { cause: error },
  );
}

/** A `lookup` that answers with the checked address only, whatever name it is asked for. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  const { address, family } = target.address;
  // Node 20 asks with `all: true` when autoSelectFamily (happy eyeballs) is on.
  return ((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    // Answer asynchronously, as dns.lookup does. Answered at once, the socket connects inside
    // the request's constructor, and a connect that fails at once (ENETUNREACH, EHOSTUNREACH:
    // no route) emits 'error' before the request has put its listener on the socket: an
    // unhandled 'error' that ends the process.
    setImmediate(() => {
      if (lookupOptions.all) callback(null, [{ address, family }]);
      else callback(null, address, family);
    });
  }) as unknown as LookupFunction;
}

function wrapResponse(response: IncomingMessage, signal: AbortSignal): PinnedResponse {
  // A connection cut between the headers and readBody() errors the response with no listener
  // yet; readBody() reports it (the stream is errored), so this one only keeps it from crashing.
  response.on('error', () => {});
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) {
    if (value === undefined) continue;
    headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return {
    status: response.statusCode ?? 0,
    headers,
    readBody: (maxBytes) => collectBoundedBody(response, headers['content-encoding'] ?? '', maxBytes, signal),
    discard: () => {
      response.destroy();
    },
  };
}

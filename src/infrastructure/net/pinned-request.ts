/**
 * The Node adapter of `PinnedRequester`: one GET with node:http/https that connects to the
 * address the SSRF guard already checked. A custom `lookup` hands that address to the socket,
 * so no second DNS resolution happens, while Host and TLS SNI keep the original name.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
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
      const code = (error as { code?: string }).code;
      reject(
        new ToolError(`Could not connect to ${target.url.host}: ${code ?? error.message}.`, { cause: error }),
      );
    });
    request.end();
  });

/** A `lookup` that answers with the checked address only, whatever name it is asked for. */
function pinnedLookup(target: CheckedTarget): LookupFunction {
  const { address, family } = target.address;
  // Node 20 asks with `all: true` when autoSelectFamily (happy eyeballs) is on.
  return ((_hostname: string, lookupOptions: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (lookupOptions.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

function wrapResponse(response: IncomingMessage, signal: AbortSignal): PinnedResponse {
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

/**
 * The chat transport on Node: `node:http` with a keep-alive agent. A 50-step run against a local
 * server spends about half as long in `node:http` as in `fetch` (undici's Request, Response and Web
 * streams on every chunk; ADR 0006). Node only: Deno uses `fetchTransport`.
 */
import { Buffer } from 'node:buffer';
import type { Agent as HttpAgent, IncomingHttpHeaders, IncomingMessage, RequestOptions } from 'node:http';
import { Agent, request as httpRequest } from 'node:http';
import type { ChatTransport, TransportRequest, TransportResponse } from './chat-transport.ts';

type RequestFn = (
  url: URL,
  options: RequestOptions,
  onResponse: (response: IncomingMessage) => void,
) => ReturnType<typeof httpRequest>;

/** One agent for every model server: each step's request reuses the socket the last one left. */
const httpAgent = new Agent({ keepAlive: true });
let https: Promise<{ request: RequestFn; agent: HttpAgent }> | undefined;

/** POSTs over `node:http` (or `node:https`, loaded when a URL needs it) with a keep-alive agent. */
export const nodeHttpTransport: ChatTransport = async (url, request) => {
  const target = new URL(url);
  if (target.protocol !== 'https:') return send(httpRequest, httpAgent, target, request);
  https ??= import('node:https').then((module) => ({
    request: module.request,
    agent: new module.Agent({ keepAlive: true }),
  }));
  const { request: httpsRequest, agent } = await https;
  return send(httpsRequest, agent, target, request);
};

function send(
  requestFn: RequestFn,
  agent: HttpAgent,
  target: URL,
  request: TransportRequest,
): Promise<TransportResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = requestFn(
      target,
      {
        method: 'POST',
        agent,
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        signal: request.signal,
      },
      (response) => {
        response.setEncoding('utf8');
        resolve({
          status: response.statusCode ?? 0,
          headers: () => toHeaders(response.headers),
          body: response as AsyncIterable<string>,
        });
      },
    );
    // Kept for the life of the request: an error after the response (a reset) must not go unheard.
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

function toHeaders(raw: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  return headers;
}

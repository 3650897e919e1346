import type { ChatTransport } from './chat-transport.ts';
import { fetchTransport } from './fetch-transport.ts';

let nodeTransport: Promise<ChatTransport> | undefined;

/**
 * The transport for this runtime: on Node its own HTTP client with a keep-alive agent (no Web
 * streams on the hot path; ADR 0006), loaded on first use; Web `fetch` on Deno.
 */
export const defaultTransport: ChatTransport = async (url, request) => {
  if ('Deno' in globalThis) return fetchTransport(url, request);
  nodeTransport ??= import('./node-http-transport.ts').then((module) => module.nodeHttpTransport);
  return (await nodeTransport)(url, request);
};

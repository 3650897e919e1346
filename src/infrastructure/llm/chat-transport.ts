/** One POST to a model server, as the chat client hands it to a transport. */
export interface TransportRequest {
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Aborts the request, and the body while it streams. */
  readonly signal: AbortSignal;
}

/** A model server's answer once its headers have arrived; the body is still streaming. */
export interface TransportResponse {
  readonly status: number;
  /** The response headers, built on demand: only an error needs them. */
  headers(): Headers;
  /** The body as text, decoded as UTF-8 across chunk boundaries. Read it to the end or abandon it. */
  readonly body: AsyncIterable<string>;
}

/**
 * Sends a POST and resolves when the response headers arrive. It rejects when the server cannot
 * be reached or the signal aborts; reading the body rejects when the stream breaks.
 */
export type ChatTransport = (url: string, request: TransportRequest) => Promise<TransportResponse>;

/** Web `fetch`: the transport on runtimes without `node:http` (Deno). */
export const fetchTransport: ChatTransport = async (url, request) => {
  const response = await fetch(url, {
    method: 'POST',
    headers: request.headers,
    body: request.body,
    signal: request.signal,
  });
  return { status: response.status, headers: () => response.headers, body: textChunks(response.body) };
};

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

async function* textChunks(body: ReadableStream<Uint8Array> | null): AsyncGenerator<string> {
  if (body === null) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let done = false;
  try {
    for (;;) {
      const read = await reader.read();
      if (read.done) break;
      yield decoder.decode(read.value, { stream: true });
    }
    done = true;
    const tail = decoder.decode();
    if (tail !== '') yield tail;
  } finally {
    // A reader that stops early (an error event, a bad line) releases the connection.
    if (!done) await reader.cancel().catch(() => {});
  }
}

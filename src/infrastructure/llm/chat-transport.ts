/**
 * The contract between the chat client and the HTTP it speaks over. The transports are
 * fetch-transport.ts (Web `fetch`, any runtime) and node-http-transport.ts (Node); which one a
 * runtime uses is runtime-transport.ts.
 */

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

import type { ChatTransport } from './chat-transport.ts';

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

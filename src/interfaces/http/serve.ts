/**
 * Listening for the HTTP API: the one runtime-specific module of it (STYLE §4). Node serves
 * through @hono/node-server, Deno through `Deno.serve`; both take the app's web-standard `fetch`.
 */

/** A web-standard request handler (a Hono app's `fetch`). */
export type FetchHandler = (request: Request) => Response | Promise<Response>;

/** A server that is listening. */
export interface ListeningServer {
  /** e.g. `http://127.0.0.1:8787`, with the port actually bound (useful with port 0). */
  readonly url: string;
  readonly port: number;
  /** Stops accepting connections; those still open after `graceMs` (default 2 s) are cut. */
  close(graceMs?: number): Promise<void>;
}

interface DenoServer {
  readonly addr: { readonly port: number };
  shutdown(): Promise<void>;
}

interface DenoServe {
  serve(
    options: { hostname: string; port: number; onListen?: (addr: { port: number }) => void },
    handler: FetchHandler,
  ): DenoServer;
}

/** Starts listening on `host:port` (port 0: any free port) with the runtime's own server. */
export async function listen(
  fetch: FetchHandler,
  options: { host: string; port: number },
): Promise<ListeningServer> {
  const deno = (globalThis as { Deno?: DenoServe }).Deno;
  if (deno !== undefined) return listenDeno(deno, fetch, options);
  return listenNode(fetch, options);
}

function urlOf(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function withGrace(done: Promise<unknown>, graceMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const grace = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, graceMs);
  });
  return Promise.race([done.then(() => {}), grace]).finally(() => clearTimeout(timer));
}

async function listenDeno(
  deno: DenoServe,
  fetch: FetchHandler,
  options: { host: string; port: number },
): Promise<ListeningServer> {
  // `onListen` is set so that Deno does not print its own "Listening on" line to stdout.
  const server = deno.serve({ hostname: options.host, port: options.port, onListen: () => {} }, fetch);
  const port = server.addr.port;
  return {
    url: urlOf(options.host, port),
    port,
    close: (graceMs = 2000) => withGrace(server.shutdown(), graceMs),
  };
}

async function listenNode(
  fetch: FetchHandler,
  options: { host: string; port: number },
): Promise<ListeningServer> {
  const { createAdaptorServer } = await import('@hono/node-server');
  const server = createAdaptorServer({ fetch: (request) => fetch(request) }) as import('node:http').Server;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    url: urlOf(options.host, port),
    port,
    close: (graceMs = 2000) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // Streams still open after the grace period (a client that never reads) are cut.
      return withGrace(closed, graceMs).finally(() => server.closeAllConnections());
    },
  };
}

import { isLoopbackHost } from './auth.ts';
import { type ListeningServer, listen } from './serve.ts';

/** What a metrics listener serves: Prometheus's text, and its content type. */
export interface MetricsSource {
  readonly contentType: string;
  text(): Promise<string>;
}

/**
 * A listener serving only `GET /metrics` (a `fabric worker`'s, `worker.metrics_port`), on loopback:
 * a worker has no token to protect it with, so it never listens beyond this host, and a request
 * naming another host (a web page's DNS rebinding) is refused (ADR 0022).
 */
export function listenMetrics(metrics: MetricsSource, port: number): Promise<ListeningServer> {
  return listen(
    async (request) => {
      const { pathname, hostname } = new URL(request.url);
      if (!isLoopbackHost(hostname))
        return Response.json(
          {
            error: {
              code: 'forbidden',
              message: `Host "${hostname}" is not this machine; scrape 127.0.0.1 or localhost.`,
            },
          },
          { status: 403 },
        );
      if (pathname !== '/metrics' || request.method !== 'GET')
        return Response.json(
          {
            error: {
              code: 'not_found',
              message: `No route ${request.method} ${pathname}: a worker serves only GET /metrics.`,
            },
          },
          { status: 404 },
        );
      return new Response(await metrics.text(), { headers: { 'content-type': metrics.contentType } });
    },
    { host: '127.0.0.1', port },
  );
}

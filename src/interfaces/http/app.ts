import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { FabricError } from '../../domain/errors.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { ApiError, errorBodyOf } from './api-error.ts';
import { type AuthVariables, bearerAuth, originGuard } from './auth.ts';
import { BatteryHub } from './battery-hub.ts';
import { mcpHandler } from './mcp-route.ts';
import { RunHub } from './run-hub.ts';
import { batteryRoutes } from './routes-batteries.ts';
import { daemonRoutes } from './routes-daemon.ts';
import { approvalRoutes } from './routes-approvals.ts';
import { parkedRunsFor } from './parked-resumer.ts';
import { ApprovalFeed } from './approval-feed.ts';
import type { ParkedRuns } from '../../application/approvals/parked-runs.ts';
import { infoRoutes } from './routes-info.ts';
import { runRoutes } from './routes-runs.ts';
import { httpStatusFor } from './status.ts';
import { viewerRoutes } from './viewer/routes-viewer.ts';

// A task is prose, not a data set; this bounds what one request can make the server hold.
const MAX_BODY_BYTES = 1024 * 1024;

/** What the HTTP API is built from. */
export interface AppDeps {
  readonly fabric: Fabric;
  /** The bearer token every route but `GET /v1/health` requires; none: no auth (loopback only). */
  readonly token?: string | undefined;
  /** True when the server listens beyond loopback: a token is then mandatory. */
  readonly requireToken: boolean;
  /** The live runs; the server passes its own so that it can cancel them on shutdown. */
  readonly hub?: RunHub | undefined;
  /** The batteries this server runs; the server passes its own so that it can cancel them on shutdown. */
  readonly batteries?: BatteryHub | undefined;
  /** `GET /metrics` in Prometheus's text format (SPEC §21); absent: no such route. */
  readonly metrics?: { readonly contentType: string; text(): Promise<string> } | undefined;
  /** Diagnostics (runs started and ended, unexpected errors). */
  readonly log?: ((line: string) => void) | undefined;
  /**
   * Resumes runs parked on an approval once answered (SPEC §19); the server passes its own, which
   * also polls for answers given elsewhere. Default: one that resumes on answers given here.
   */
  readonly parked?: ParkedRuns | undefined;
}

/** The HTTP API as a Hono app (SPEC §8). It never listens: `serve.ts` does, or `app.request()` in tests. */
export function createApp(deps: AppDeps): Hono<{ Variables: AuthVariables }> {
  if (deps.requireToken && deps.token === undefined) {
    throw new FabricError(
      'usage',
      'Listening beyond loopback needs a bearer token: set FABRIC_API_TOKEN (or api.token in the config), or use --host 127.0.0.1.',
    );
  }
  const log = deps.log ?? (() => {});
  const hub = deps.hub ?? new RunHub(deps.fabric);
  const batteries = deps.batteries ?? new BatteryHub();
  const app = new Hono<{ Variables: AuthVariables }>();

  app.onError((error, c) => {
    const body = errorBodyOf(error);
    const status = httpStatusFor(body.error.code);
    if (status >= 500 && !(error instanceof FabricError))
      log(`${c.req.method} ${c.req.path}: ${String(error)}`);
    return c.json(body, status);
  });
  app.notFound((c) =>
    c.json(
      errorBodyOf(new ApiError('not_found', `No route ${c.req.method} ${c.req.path}. See docs/http-api.md.`)),
      404,
    ),
  );

  // A server on loopback is reachable by web pages too; without a token, Host and Origin are its guard.
  app.use('*', originGuard(!deps.requireToken));
  // The run viewer's pages come before the bearer check: they sign in with a form or a cookie.
  app.route(
    '/',
    viewerRoutes({
      fabric: deps.fabric,
      hub,
      token: deps.token,
      nav: { daemon: true, batteries: true },
      batteries,
    }),
  );
  app.use('*', bearerAuth(deps.token));
  app.use(
    '/v1/*',
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new ApiError('payload_too_large', `Request bodies are limited to ${MAX_BODY_BYTES} bytes.`);
      },
    }),
  );
  // Behind the bearer check like the API: beyond loopback a scraper sends the token.
  const metrics = deps.metrics;
  if (metrics !== undefined)
    app.get('/metrics', async (c) =>
      c.body(await metrics.text(), 200, { 'content-type': metrics.contentType }),
    );
  app.route('/v1/runs', runRoutes({ fabric: deps.fabric, hub, log }));
  app.route('/v1/daemon', daemonRoutes(deps.fabric));
  app.route('/v1/batteries', batteryRoutes({ fabric: deps.fabric, batteries, log }));
  const parked = deps.parked ?? parkedRunsFor(deps.fabric, hub, log);
  const feed = new ApprovalFeed(deps.fabric.approvals, log);
  app.route(
    '/v1',
    approvalRoutes(deps.fabric, {
      log,
      feed,
      onAnswered: (record) => {
        feed.answered(record);
        void parked.answered(record);
      },
    }),
  );
  app.route('/v1', infoRoutes(deps.fabric));
  app.all('/mcp', mcpHandler(deps.fabric, hub, log));
  return app;
}

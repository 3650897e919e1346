import { type Context, Hono } from 'hono';
import type { ProcessLiveness } from '../../../application/runs/liveness-ports.ts';
import { buildTimeline } from '../../../application/replay/replay-timeline.ts';
import { FabricError, errorMessage } from '../../../domain/errors.ts';
import { batteryReadModel } from '../../../composition/battery.ts';
import type { Fabric } from '../../../composition/fabric.ts';
import { modelCardStore } from '../../../composition/model-cards.ts';
import { type ModelCard, staleness } from '../../../application/models/model-card.ts';
import { ApiError } from '../api-error.ts';
import { sameSecret } from '../auth.ts';
import { runIdParam } from '../bodies.ts';
import { createDaemonStatusReader } from '../../../composition/daemon.ts';
import type { BatteryHub } from '../battery-hub.ts';
import { type RunHub, liveRuns } from '../run-hub.ts';
import { sseResponse } from '../sse.ts';
import { LIVE_JS, STYLE_CSS } from './assets.ts';
import { approvalsPage } from './approvals-page.ts';
import { batteriesPage, batteryPage } from './battery-pages.ts';
import { type DaemonEntry, daemonPage } from './daemon-page.ts';
import { type CardEntry, cardSlug, modelCardPage, modelsPage } from './models-page.ts';
import type { SafeHtml } from './html.ts';
import type { Nav } from './layout.ts';
import { RunIndex, type RunQuery, VIEWER_CACHED_RUNS } from './run-index.ts';
import { loginPage, problemPage, replayPage, runFragment, runPage } from './run-page.ts';
import { LIST_STATUSES, runRow, runsPage } from './runs-page.ts';
import { RunListFeed } from './run-list-feed.ts';
import { hasViewerCookie, viewerSetCookie } from './viewer-cookie.ts';

/** What the viewer reads: the fabric's runlogs and config, the server's live runs, its token. */
export interface ViewerDeps {
  readonly fabric: Fabric;
  readonly hub: RunHub;
  readonly token: string | undefined;
  /** Which optional views have their API routes in this server. */
  readonly nav: Nav;
  /** The batteries this server runs (their running cells show); others are read from their state files. */
  readonly batteries?: BatteryHub | undefined;
  readonly liveness?: ProcessLiveness;
}

/** Runs shown on one page of the list. */
const PAGE_SIZE = 50;
/** Batteries shown in their list. */
const BATTERY_LIST_SIZE = 100;
/** The login form is a token and a path. */
const MAX_FORM_BYTES = 8 * 1024;

// Nothing but this server: the browser refuses any other source, whatever a runlog holds.
const PAGE_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * The run viewer (SPEC §13): `GET /` lists the runs, `/runs/<id>` shows one, live while it
 * goes on. Mounted before the bearer middleware, it signs its pages in itself: with a token
 * configured, a page needs the header or the viewer cookie, else it answers the token form.
 */
export function viewerRoutes(deps: ViewerDeps): Hono {
  const { fabric, hub, token, nav } = deps;
  // The runs this server runs and the runlogs; with the queue on, also the runs queued for and
  // run by workers, from the control plane (their runlogs are on the workers' hosts).
  const index = new RunIndex(
    fabric.runReadModel({
      live: liveRuns(hub),
      control: 'queue',
      listControlRuns: true,
      controlRowDecides: true,
      liveness: deps.liveness,
      cacheEnded: VIEWER_CACHED_RUNS,
    }),
  );
  const feed = new RunListFeed(hub, index, fabric.runLogs);
  const app = new Hono();

  const send = (c: Context, body: SafeHtml, status: 200 | 401 | 404 | 422 | 500 = 200) =>
    c.body(body.text, status, { 'content-type': 'text/html; charset=utf-8', ...PAGE_HEADERS });

  /** Serves a page once the request is signed in; `?token=` signs in and comes back without it. */
  const guarded =
    (render: (c: Context) => Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      if (token === undefined) return render(c);
      const url = new URL(c.req.url);
      const given = url.searchParams.get('token');
      if (given !== null) {
        if (!(await sameSecret(given, token))) return send(c, loginPage(pathOf(url), true, nav), 401);
        url.searchParams.delete('token');
        c.header('set-cookie', await viewerSetCookie(token));
        return c.redirect(pathOf(url), 303);
      }
      const bearer = /^Bearer\s+(\S+)\s*$/i.exec(c.req.header('authorization') ?? '')?.[1];
      const signedIn =
        (bearer !== undefined && (await sameSecret(bearer, token))) ||
        (await hasViewerCookie(c.req.method, c.req.header('cookie'), token));
      return signedIn ? render(c) : send(c, loginPage(pathOf(url), false, nav), 401);
    };

  /** A run's page, or the page that says why there is none. */
  const withRun =
    (render: (c: Context, run: Awaited<ReturnType<RunIndex['read']>>) => Response | Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      const id = c.req.param('id') ?? '';
      try {
        return await render(c, await index.read(runIdParam(id)));
      } catch (error) {
        if (error instanceof ApiError || (error instanceof FabricError && error.code === 'run_not_found'))
          return send(c, problemPage('Run not found', `There is no run "${id}" here.`, nav), 404);
        if (error instanceof FabricError && error.code === 'runlog_corrupt')
          return send(c, problemPage('Unreadable runlog', errorMessage(error), nav), 422);
        throw error;
      }
    };

  app.get('/viewer/style.css', (c) =>
    c.body(STYLE_CSS, 200, { 'content-type': 'text/css; charset=utf-8', 'cache-control': 'no-cache' }),
  );
  app.get('/viewer/live.js', (c) =>
    c.body(LIVE_JS, 200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }),
  );

  app.get(
    '/',
    guarded(async (c) => {
      const query = listQuery(c);
      const result = await index.page(query);
      const specialists = Object.keys(fabric.config.specialists).sort();
      return send(c, runsPage(result, query, { specialists, nav, now: new Date() }));
    }),
  );

  // The runs list's changes: each run that starts or moves on, as its rendered row.
  app.get(
    '/viewer/runs/events',
    guarded(async () => {
      let seq = 0;
      return sseResponse<RunRowEvent>(
        (send) =>
          feed.subscribe((views) => {
            const now = new Date();
            for (const view of views) {
              seq += 1;
              send({
                seq,
                kind: 'run',
                run_id: view.run_id,
                status: view.status,
                specialist: view.specialist ?? '',
                row: runRow(view, now).text,
              });
            }
          }),
        () => false,
      );
    }),
  );

  // A run's approvals (SPEC §19), each state: the pending ones to answer, the answered below.
  const approvalsOf = (runId: string) => fabric.approvals.list({ runId });

  app.get(
    '/runs/:id',
    guarded(
      withRun(async (c, run) =>
        send(c, runPage(run.view, run.events, await approvalsOf(run.view.run_id), nav)),
      ),
    ),
  );

  app.get(
    '/approvals',
    guarded(async (c) => send(c, approvalsPage(await fabric.approvals.list({ state: 'pending' }), nav))),
  );

  // The whole output of a result cut to fit the window (SPEC §17), as text.
  app.get(
    '/runs/:id/outputs/:call',
    guarded(
      withRun(async (c, run) => {
        const text = await fabric.keptOutputs().read(run.view.run_id, c.req.param('call') ?? '');
        if (text === null)
          return send(
            c,
            problemPage('No kept output', 'This run kept no whole output of that call.', nav),
            404,
          );
        return c.body(text, 200, { 'content-type': 'text/plain; charset=utf-8', ...PAGE_HEADERS });
      }),
    ),
  );

  app.get(
    '/runs/:id/after/:seq',
    guarded(
      withRun(async (c, run) => {
        const after = Number(c.req.param('seq'));
        const approvals = await approvalsOf(run.view.run_id);
        return send(c, runFragment(run.view, run.events, approvals, Number.isSafeInteger(after) ? after : 0));
      }),
    ),
  );

  app.get(
    '/runs/:id/replay',
    guarded(
      withRun((c, run) => {
        const timeline = buildTimeline({ runId: run.view.run_id, events: run.events, torn: run.view.torn });
        return send(c, replayPage(run.view, timeline, nav));
      }),
    ),
  );

  if (nav.daemon) {
    app.get(
      '/daemon',
      guarded(async (c) => {
        const runsDir = fabric.config.runs_dir;
        const reader = createDaemonStatusReader(runsDir);
        const entries = await Promise.all(
          (await reader.repos()).map(
            (repo): Promise<DaemonEntry> =>
              // A repository moved or its openspec/ removed: said on the page, the others still shown.
              reader.read(repo).catch((error: unknown) => ({
                repo,
                error: errorMessage(error),
              })),
          ),
        );
        return send(c, daemonPage(entries, runsDir, nav));
      }),
    );
  }

  if (nav.batteries) {
    const batteries = batteryReadModel(fabric, deps.batteries);
    app.get(
      '/batteries',
      guarded(async (c) => send(c, batteriesPage(await batteries.list(BATTERY_LIST_SIZE), nav))),
    );
    app.get(
      '/batteries/:id',
      guarded(async (c) => {
        const id = c.req.param('id') ?? '';
        try {
          return send(c, batteryPage(await batteries.read(id), nav));
        } catch (error) {
          if (error instanceof FabricError && (error.code === 'run_not_found' || error.code === 'usage'))
            return send(c, problemPage('Battery not found', `There is no battery "${id}" here.`, nav), 404);
          if (error instanceof FabricError && error.code === 'runlog_corrupt')
            return send(c, problemPage('Unreadable battery', errorMessage(error), nav), 422);
          throw error;
        }
      }),
    );
  }

  // The model cards (SPEC §20), each flagged stale against what the servers list now.
  const cardEntries = async (signal: AbortSignal): Promise<CardEntry[]> => {
    const [probes, cards] = await Promise.all([fabric.catalog.probe(signal), modelCardStore(fabric).list()]);
    const listed = probes.flatMap((probe) => probe.models);
    const now = (card: ModelCard) =>
      listed.find((m) => m.id === card.model && m.backend === card.backend && m.baseUrl === card.baseUrl);
    return cards.map((card) => ({ card, stale: staleness(card, now(card)) }));
  };
  app.get(
    '/models',
    guarded(async (c) => send(c, modelsPage(await cardEntries(c.req.raw.signal), nav))),
  );
  app.get(
    '/models/:slug',
    guarded(async (c) => {
      const slug = c.req.param('slug') ?? '';
      const entry = (await cardEntries(c.req.raw.signal)).find(({ card }) => cardSlug(card) === slug);
      if (entry === undefined)
        return send(
          c,
          problemPage('No such card', 'There is no model card here by that name; see the models page.', nav),
          404,
        );
      return send(c, modelCardPage(entry, nav));
    }),
  );

  app.post('/login', async (c) => {
    if (token === undefined) return c.redirect('/', 303);
    const length = Number(c.req.header('content-length') ?? '0');
    if (length > MAX_FORM_BYTES) throw new ApiError('payload_too_large', 'The sign-in form is too large.');
    const form = new URLSearchParams(await c.req.text());
    const next = safeNext(form.get('next'));
    if (!(await sameSecret(form.get('token') ?? '', token))) return send(c, loginPage(next, true, nav), 401);
    c.header('set-cookie', await viewerSetCookie(token));
    return c.redirect(next, 303);
  });

  return app;
}

/** One frame of the runs list's stream: a run's row as the list renders it, and what the filters compare. */
interface RunRowEvent {
  readonly seq: number;
  readonly kind: 'run';
  readonly run_id: string;
  readonly status: string;
  readonly specialist: string;
  readonly row: string;
}

function listQuery(c: Context): RunQuery {
  const status = c.req.query('status');
  const specialist = c.req.query('specialist');
  const before = c.req.query('before');
  return {
    status: status && (LIST_STATUSES as readonly string[]).includes(status) ? status : undefined,
    specialist: specialist || undefined,
    before: before || undefined,
    limit: PAGE_SIZE,
  };
}

function pathOf(url: URL): string {
  return url.pathname + url.search;
}

/** Where the form may send the browser back to: a path on this server, never another site. */
function safeNext(next: string | null): string {
  if (next === null) return '/';
  return next.startsWith('/') && !next.startsWith('//') && !next.includes('\\') ? next : '/';
}

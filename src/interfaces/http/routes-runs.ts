import { cancelParkedRun } from '../../application/approvals/cancel-parked.ts';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Hono } from 'hono';
import type { ProcessLiveness } from '../../application/runs/liveness-ports.ts';
import { buildTimeline } from '../../application/replay/replay-timeline.ts';
import { cancelRun } from '../../application/run/cancel-run.ts';
import { submitRun } from '../../application/run/submit-run.ts';
import { followControlEvents, queuedRunControl } from '../../application/runs/control-events.ts';
import { requireWholeRun } from '../../application/runs/whole-run.ts';
import { FabricError } from '../../domain/errors.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { runStartOf } from '../../application/replay/replay-run.ts';
import { createRunReplay } from '../../composition/replay.ts';
import { ApiError } from './api-error.ts';
import {
  ReplayBody,
  ResumeRunBody,
  StartRunBody,
  lastEventIdHeader,
  limitParam,
  readJson,
  runIdParam,
  validateBody,
} from './bodies.ts';
import { type RunHub, liveRuns } from './run-hub.ts';
import { type RunView, runLinks, runViewOf } from './run-view.ts';
import { sseResponse } from './sse.ts';
import { steerRoutes } from './routes-steer.ts';

/** What the run routes use. */
export interface RunRoutesDeps {
  readonly fabric: Fabric;
  readonly hub: RunHub;
  readonly log: (line: string) => void;
  /** Tells whether the process of a run this server does not run is alive; default: this machine's. */
  readonly liveness?: ProcessLiveness;
}

/** `/v1/runs`: start, list, show, stream, download, cancel and replay runs. */
export function runRoutes({ fabric, hub, log, liveness }: RunRoutesDeps): Hono {
  // Reads every runs directory the server sees; runs it starts or resumes write into its own.
  const store = fabric.runLogs;
  const app = new Hono();
  // A run with no runlog here is looked for in the control plane while runs are queued for
  // workers, where the reaper ends a dead worker's runs; the live runs are this server's.
  const runs = fabric.runReadModel({
    live: liveRuns(hub),
    control: 'queue',
    // The list has the runs workers ran (their runlogs are on their hosts) and the queued ones.
    listControlRuns: true,
    controlRowDecides: true,
    liveness,
  });

  // A run queued for a worker (or run by one) is found, followed and cancelled in the control plane.
  const queued = {
    queueOn: async () => (await fabric.runQueue()) !== null,
    control: () => fabric.controlStore(),
  };

  /** The run with this id: live in this server, else from its runlog, else (queue on) from the control plane. */
  const viewOf = async (id: string): Promise<RunView> => runViewOf(await runs.show(id));

  app.post('/', async (c) => {
    const body = validateBody(StartRunBody, await readJson(c.req.raw));
    // Bad input is answered before a model is even looked for: 400, naming the path (the run
    // use case checks the specialist and the workspace first). With the queue on, the model and
    // the pack are found on the worker that takes the run, whose control row says why if it cannot start.
    const submitted = await submitRun(
      {
        queue: () => fabric.runQueue(),
        validate: (request) => fabric.validateRun(request),
        newRunId: () => fabric.newRunId(),
        // Resolves the specialist, the model and the pack before answering, so those errors are the
        // response. The server logs a control-plane outage once (`fabric serve`), not once per run.
        startHere: (request) => hub.start(request),
      },
      {
        specialist: body.specialist,
        task: body.task,
        workspace: body.workspace,
        model: body.model,
        maxSteps: body.max_steps,
      },
    );
    const { runId } = submitted;
    if (submitted.status === 'queued') log(`run ${runId} queued (${body.specialist})`);
    else {
      log(`run ${runId} started (${body.specialist})`);
      void submitted.settled.then((result) => log(`run ${runId} ${result?.status ?? 'failed'}`));
    }
    const links = runLinks(runId);
    c.header('Location', links.self);
    return c.json({ run_id: runId, status: submitted.status, links }, 202);
  });

  app.get('/', async (c) => {
    const limit = limitParam(c.req.query('limit'), 20, 1000);
    // An unreadable runlog is left out of the list; GET /v1/runs/:id explains it.
    const page = await runs.list({ limit });
    return c.json({ runs: page.runs.map(runViewOf) });
  });

  app.get('/:id', async (c) => c.json(await viewOf(runIdParam(c.req.param('id')))));

  app.get('/:id/events', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const after = lastEventIdHeader(c.req.header('last-event-id'));
    const live = hub.get(id);
    if (live) {
      // A resumed run's backlog has its earlier run_end: the stream ends at the one written here.
      return sseResponse(
        (send, end) => {
          const unfollow = hub.follow(id, after, send);
          if (unfollow === undefined) end();
          return unfollow;
        },
        (event) => event.kind === 'run_end' && event.seq > live.backlogSeq,
      );
    }
    const contents = await store.read(id).catch(async (error: unknown) => {
      // A run on a worker: its events as the worker mirrors them to the control plane.
      const control = await queuedRunControl(queued, id).catch(() => null);
      if (control === null) throw error;
      return control;
    });
    if ('getRun' in contents)
      return sseResponse((send, end) => followControlEvents(contents, id, after, send, end));
    // A finished run (or one another process writes): what its runlog has, then the end.
    const { events } = contents;
    return sseResponse((send, end) => {
      for (const event of events) if (event.seq > after) send(event);
      end();
      return undefined;
    });
  });

  app.get('/:id/runlog', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const path = hub.get(id) ? store.pathOf(id) : (await store.read(id)).location;
    const text = await readFile(path);
    return c.body(text, 200, {
      'content-type': 'application/x-ndjson',
      'content-disposition': `attachment; filename="${id}.runlog.jsonl"`,
    });
  });

  // Goes on with a run its process left (SPEC §18): 202 and Location as for a new run; refusals 409.
  const steering = steerRoutes(app, fabric, (id) => runs.show(id), log);

  app.post('/:id/resume', async (c) => {
    const id = runIdParam(c.req.param('id'));
    // The body is checked whatever the run's state: a bad one is 400 for a running run too.
    const body = validateBody(ResumeRunBody, await readJson(c.req.raw));
    // A running (paused) run continues (SPEC §19); a run whose process left it resumes (§18).
    const continued = await steering.unpause(id, c.req.header('x-fabric-viewer'));
    if (continued !== null) return continued;
    const backlog = (await fabric.runLogStore.read(id)).events;
    const runId = backlog[0]?.run_id ?? id;
    const live = await hub.resume(runId, backlog, (observer, signal) =>
      fabric.resume({
        run: runId,
        moreSteps: body.max_steps,
        force: body.force === true,
        observers: [observer],
        signal,
      }),
    );
    log(`run ${runId} resumed`);
    void live.settled.then((result) => log(`run ${runId} ${result?.status ?? 'failed'}`));
    const links = runLinks(runId);
    c.header('Location', links.self);
    return c.json({ run_id: runId, status: 'running' as const, links }, 202);
  });

  app.post('/:id/cancel', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const outcome = await cancelRun(
      {
        live: (runId) => {
          const live = hub.get(runId);
          return (
            live && {
              cancel: () => live.controller.abort(new Error('cancelled through the HTTP API')),
              settled: live.settled,
            }
          );
        },
        show: (runId) => runs.show(runId),
        queue: () => fabric.runQueue(),
        cancelParked: (runId) =>
          cancelParkedRun(
            { runLogStore: fabric.runLogStore, approvals: fabric.approvals, now: () => new Date() },
            runId,
            'http',
          ),
      },
      id,
    );
    if (outcome.kind === 'ended') return c.json(runViewOf(outcome.record));
    if (outcome.kind === 'cancelling')
      return c.json({ run_id: id, status: 'cancelling' as const, links: runLinks(id) }, 202);
    const view = outcome.record;
    throw new ApiError(
      'run_not_active',
      view.status === 'running'
        ? `Run ${view.run_id} is not running in this server (its runlog has no end: it was killed, or another process runs it).`
        : `Run ${view.run_id} has already ended (${view.status}).`,
    );
  });

  app.post('/:id/replay', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const body = validateBody(ReplayBody, await readJson(c.req.raw));
    const run = await store.read(id);
    requireWholeRun(run);
    if (!body.execute) return c.json({ runlog: run.location, ...buildTimeline(run) });
    const recorded = runStartOf(run).workspace;
    const report = await createRunReplay(fabric).execute(run, {
      source: body.workspace ?? (recorded === null ? null : resolve(recorded)),
      keep: false,
      observers: [],
      signal: c.req.raw.signal,
    });
    if (report.cancelled)
      throw new FabricError('run_cancelled', 'The replay was cancelled; nothing was compared.');
    const { runId: run_id, location: runlog, torn } = run;
    return c.json({
      run_id,
      runlog,
      torn,
      ...report.comparison,
      replay: report.replay,
      workspace: report.workspace,
    });
  });

  return app;
}

import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Hono } from 'hono';
import type { ControlStore } from '../../application/control/control-ports.ts';
import type { ProcessLiveness } from '../../application/runs/process-liveness.ts';
import { buildTimeline } from '../../application/replay/replay-timeline.ts';
import { newRunId } from '../../application/run/run-id.ts';
import { requireWholeRun } from '../../application/runs/whole-run.ts';
import { FabricError, errorMessage } from '../../domain/errors.ts';
import { LocalProcessLiveness } from '../../infrastructure/runlog/process-liveness.ts';
import { systemClock } from '../../infrastructure/clock.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { runStartOf } from '../../application/replay/replay-run.ts';
import { createRunReplay } from '../../composition/replay.ts';
import { ApiError } from './api-error.ts';
import {
  ReplayBody,
  StartRunBody,
  lastEventIdHeader,
  limitParam,
  readJson,
  runIdParam,
  validateBody,
} from './bodies.ts';
import { controlEventSource } from './queued-runs.ts';
import { type RunHub, liveRuns } from './run-hub.ts';
import { type RunView, runLinks, runViewOf } from './run-view.ts';
import { sseResponse } from './sse.ts';

/** What the run routes use. */
export interface RunRoutesDeps {
  readonly fabric: Fabric;
  readonly hub: RunHub;
  readonly log: (line: string) => void;
  /** Tells whether the process of a run this server does not run is alive; default: this machine's. */
  readonly liveness?: ProcessLiveness;
}

/** How long `cancel` waits for the run to record its end before answering `cancelling`. */
const CANCEL_WAIT_MS = 10_000;

/** `/v1/runs`: start, list, show, stream, download, cancel and replay runs. */
export function runRoutes({ fabric, hub, log, liveness = new LocalProcessLiveness() }: RunRoutesDeps): Hono {
  const store = fabric.runLogStore;
  const app = new Hono();
  // A run with no runlog here is looked for in the control plane while runs are queued for
  // workers (issue 17), where the reaper ends a dead worker's runs; the live runs are this server's.
  const runs = fabric.runReadModel({
    live: liveRuns(hub),
    control: 'queue',
    controlRowDecides: true,
    liveness,
  });

  /** The control store, when the queue is on and it has this run (one a worker runs or ran). */
  const queuedControl = async (id: string): Promise<ControlStore | null> => {
    if ((await fabric.runQueue()) === null) return null;
    const control = await fabric.controlStore();
    return control !== null && (await control.getRun(id)) !== null ? control : null;
  };

  /** The run with this id: live in this server, else from its runlog, else (queue on) from the control plane. */
  const viewOf = async (id: string): Promise<RunView> => runViewOf(await runs.show(id));

  app.post('/', async (c) => {
    const body = validateBody(StartRunBody, await readJson(c.req.raw));
    // Bad input is answered before a model is even looked for: 400, naming the path (the run
    // use case checks the specialist and the workspace first).
    const queued = await fabric.runQueue();
    if (queued !== null) {
      // Queued for a worker: the specialist and the workspace are checked here; the model and
      // the pack on the worker that takes it, whose control row says why if it cannot start.
      await fabric.validateRun(body);
      const run = {
        runId: newRunId(systemClock),
        specialist: body.specialist,
        task: body.task,
        workspace: body.workspace,
        model: body.model,
        maxSteps: body.max_steps,
      };
      try {
        await queued.workers.recordQueued(run);
        await queued.queue.enqueue(run);
      } catch (error) {
        throw new FabricError(
          'queue_unavailable',
          `The run could not be queued: ${errorMessage(error)}. Check that the Postgres of FABRIC_DSN / control.dsn runs, then send it again.`,
          { cause: error },
        );
      }
      log(`run ${run.runId} queued (${body.specialist})`);
      const links = runLinks(run.runId);
      c.header('Location', links.self);
      return c.json({ run_id: run.runId, status: 'queued' as const, links }, 202);
    }
    // Resolves the specialist, the model and the pack before answering, so those errors are the response.
    const live = await hub.start({
      specialist: body.specialist,
      task: body.task,
      workspace: body.workspace,
      model: body.model,
      maxSteps: body.max_steps,
      // The server logs a control-plane outage once (`fabric serve`), not once per run.
      // A POST answers once the run has started: a busy workspace is 409 workspace_busy, not a wait.
      waitForWorkspace: false,
    });
    log(`run ${live.runId} started (${body.specialist})`);
    void live.settled.then((result) => log(`run ${live.runId} ${result?.status ?? 'failed'}`));
    const links = runLinks(live.runId);
    c.header('Location', links.self);
    return c.json({ run_id: live.runId, status: 'running' as const, links }, 202);
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
    if (hub.get(id)) {
      return sseResponse((send, end) => {
        const unfollow = hub.follow(id, after, send);
        if (unfollow === undefined) end();
        return unfollow;
      });
    }
    const contents = await store.read(id).catch(async (error: unknown) => {
      // A run on a worker: its events as the worker mirrors them to the control plane.
      const control = await queuedControl(id).catch(() => null);
      if (control === null) throw error;
      return control;
    });
    if ('getRun' in contents) return sseResponse(controlEventSource(contents, id, after));
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

  app.post('/:id/cancel', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const live = hub.get(id);
    if (!live) {
      const view = await viewOf(id);
      const queued = await fabric.runQueue();
      if (queued !== null && (view.status === 'queued' || (view.status === 'running' && !view.live))) {
        // The worker that runs it polls for cancel requests with its heartbeat.
        await queued.workers.requestCancel(id);
        const deadline = Date.now() + CANCEL_WAIT_MS;
        for (;;) {
          const now = await viewOf(id);
          if (now.status !== 'queued' && now.status !== 'running') return c.json(now);
          if (Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        return c.json({ run_id: id, status: 'cancelling' as const, links: runLinks(id) }, 202);
      }
      throw new ApiError(
        'run_not_active',
        view.status === 'running'
          ? `Run ${view.run_id} is not running in this server (its runlog has no end: it was killed, or another process runs it).`
          : `Run ${view.run_id} has already ended (${view.status}).`,
      );
    }
    live.controller.abort(new Error('cancelled through the HTTP API'));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ended = await Promise.race([
      live.settled.then(() => true),
      new Promise<false>((done) => {
        timer = setTimeout(() => done(false), CANCEL_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    if (!ended) return c.json({ run_id: id, status: 'cancelling' as const, links: runLinks(id) }, 202);
    return c.json(await viewOf(id));
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

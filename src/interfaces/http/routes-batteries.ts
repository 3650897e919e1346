import { Hono } from 'hono';
import { summarizeBattery } from '../../application/battery/battery-summary.ts';
import type { BatteryState } from '../../application/battery/battery-types.ts';
import { plural } from '../../domain/words.ts';
import { BatteryStateFiles } from '../../infrastructure/battery/battery-state-file.ts';
import { BatterySession } from '../battery/battery-session.ts';
import { batteryAgainst } from '../battery/check-battery.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { ApiError } from './api-error.ts';
import { StartBatteryBody, batteryIssues, batteryOfBody } from './battery-body.ts';
import type { BatteryEvent, BatteryHub, LiveBattery } from './battery-hub.ts';
import { lastEventIdHeader, limitParam, readJson, validateBody } from './bodies.ts';
import { sseResponse } from './sse.ts';

/** What the battery routes use. */
export interface BatteryRoutesDeps {
  readonly fabric: Fabric;
  readonly batteries: BatteryHub;
  readonly log: (line: string) => void;
}

const ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

function idParam(value: string): string {
  if (!ID.test(value)) throw new ApiError('not_found', `No battery "${value}".`);
  return value;
}

function links(id: string) {
  return { self: `/v1/batteries/${id}`, events: `/v1/batteries/${id}/events` };
}

/**
 * `/v1/batteries` (SPEC §12): start a battery, show one (SPEC §12's `--json` shape, plus its
 * status), list them, and stream a battery's progress. Batteries started elsewhere (`fabric
 * battery`) are read from their state files.
 */
export function batteryRoutes({ fabric, batteries, log }: BatteryRoutesDeps): Hono {
  const states = new BatteryStateFiles(fabric.config.runs_dir);
  const app = new Hono();

  /** A battery: live in this server, else from its state file (404 `run_not_found` when neither). */
  const viewOf = async (id: string) => {
    const live = batteries.get(id);
    if (live !== undefined) return liveView(live, batteries.running(id));
    const state = await states.read(id);
    return stateView(state);
  };

  app.post('/', async (c) => {
    const body = validateBody(StartBatteryBody, await readJson(c.req.raw));
    const battery = batteryOfBody(body, batteryAgainst(fabric.config));
    const session = await BatterySession.open(fabric, {
      battery,
      models: body.models,
      concurrency: body.concurrency,
      signal: c.req.raw.signal,
    }).catch((error: unknown) => {
      throw batteryIssues(error);
    });
    const live = batteries.start(session);
    const { plan } = session;
    log(`battery ${plan.id} started (${plan.name}: ${plural(session.pending().length, 'cell')})`);
    void live.settled.then(() => log(`battery ${plan.id} ${session.status}`));
    c.header('Location', links(plan.id).self);
    return c.json(
      {
        id: plan.id,
        name: plan.name,
        status: 'running' as const,
        cells: session.pending().length,
        concurrency: session.concurrency,
        links: links(plan.id),
      },
      202,
    );
  });

  app.get('/', async (c) => {
    const limit = limitParam(c.req.query('limit'), 20, 1000);
    const ids = [...new Set([...batteries.list().map((live) => live.id), ...(await states.ids())])]
      .sort()
      .reverse();
    const list = [];
    for (const id of ids) {
      if (list.length >= limit) break;
      try {
        const { cells: _cells, models: _models, ...brief } = { ...(await viewOf(id)) };
        list.push(brief);
      } catch {
        // An unreadable state file is left out of the list; GET /v1/batteries/:id explains it.
      }
    }
    return c.json({ batteries: list });
  });

  app.get('/:id', async (c) => c.json(await viewOf(idParam(c.req.param('id')))));

  app.get('/:id/events', async (c) => {
    const id = idParam(c.req.param('id'));
    const after = lastEventIdHeader(c.req.header('last-event-id'));
    const isLast = (event: BatteryEvent) => event.kind === 'battery_end';
    if (batteries.get(id) !== undefined) {
      return sseResponse<BatteryEvent>((send, end) => {
        const unfollow = batteries.follow(id, after, send);
        if (unfollow === undefined) end();
        return unfollow;
      }, isLast);
    }
    // A battery run elsewhere (or before this server started): its cells as the state file has them.
    const state = await states.read(id);
    const events: BatteryEvent[] = state.cells.map((cell, i) => ({
      seq: i + 1,
      kind: 'cell_end',
      battery_id: id,
      cell,
    }));
    if (state.status !== 'running') {
      events.push({
        seq: events.length + 1,
        kind: 'battery_end',
        battery_id: id,
        status: state.status,
        reason: state.status === 'interrupted' ? 'interrupted; the cells not done are resumable' : null,
        result: summarizeBattery(state.plan, state.cells, 'not run'),
      });
    }
    return sseResponse<BatteryEvent>((send, end) => {
      for (const event of events) if (event.seq > after) send(event);
      end();
      return undefined;
    }, isLast);
  });

  return app;
}

function liveView(live: LiveBattery, running: boolean) {
  const { session } = live;
  const ended = live.events.at(-1);
  const status = running ? 'running' : ended?.kind === 'battery_end' ? ended.status : session.status;
  return {
    ...session.summary(),
    status,
    specialist: session.plan.specialist,
    cells_done: session.cells().length,
    cells_total: session.plan.tasks.length * session.plan.models.length * session.plan.repeat,
    live: running,
    links: links(live.id),
  };
}

function stateView(state: BatteryState) {
  const reason =
    state.status === 'interrupted'
      ? `interrupted before it ran; \`fabric battery --resume ${state.plan.id}\` runs it`
      : 'not run yet';
  return {
    ...summarizeBattery(state.plan, state.cells, reason),
    status: state.status,
    specialist: state.plan.specialist,
    cells_done: state.cells.length,
    cells_total: state.plan.tasks.length * state.plan.models.length * state.plan.repeat,
    live: false,
    links: links(state.plan.id),
  };
}

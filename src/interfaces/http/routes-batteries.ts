import { Hono } from 'hono';
import { batteryView } from '../../application/battery/battery-read-model.ts';
import { summarizeBattery } from '../../application/battery/battery-summary.ts';
import { batteryAgainst } from '../../application/battery/check-battery.ts';
import { batteryPorts, batteryReadModel, openBattery } from '../../composition/battery.ts';
import { plural } from '../../domain/words.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { ApiError } from './api-error.ts';
import { StartBatteryBody, batteryIssues, batteryOfBody } from './battery-body.ts';
import type { BatteryEvent, BatteryHub } from './battery-hub.ts';
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
 * status), list them, and stream a battery's progress, through the read model of batteries:
 * the ones this server runs from its hub, those started elsewhere (`fabric battery`) from their
 * state files.
 */
export function batteryRoutes({ fabric, batteries, log }: BatteryRoutesDeps): Hono {
  const readModel = batteryReadModel(fabric, batteries);
  const app = new Hono();

  /** A battery: live in this server, else from its state file (404 `run_not_found` when neither). */
  const viewOf = async (id: string) => ({ ...batteryView(await readModel.read(id)), links: links(id) });

  app.post('/', async (c) => {
    const body = validateBody(StartBatteryBody, await readJson(c.req.raw));
    const battery = batteryOfBody(body, batteryAgainst(batteryPorts(fabric)));
    const session = await openBattery(fabric, {
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
    // An unreadable state file is left out of the list; GET /v1/batteries/:id explains it.
    const list = (await readModel.list(limit)).map((record) => {
      const { cells: _cells, models: _models, ...brief } = batteryView(record);
      return { ...brief, links: links(record.plan.id) };
    });
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
    const record = await readModel.read(id);
    const events: BatteryEvent[] = record.cells.map((cell, i) => ({
      seq: i + 1,
      kind: 'cell_end',
      battery_id: id,
      cell,
    }));
    if (record.status !== 'running') {
      events.push({
        seq: events.length + 1,
        kind: 'battery_end',
        battery_id: id,
        status: record.status,
        reason: record.status === 'interrupted' ? 'interrupted; the cells not done are resumable' : null,
        result: summarizeBattery(record.plan, record.cells, 'not run'),
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

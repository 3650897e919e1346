/**
 * `/v1/runs/:id/messages` and `/v1/runs/:id/pause` (SPEC §19, ADR 0019): a person's message or a
 * pause for a running run, written to its inbox whichever process owns it. `POST /:id/resume` of
 * a paused, running run lifts the pause (see routes-runs.ts).
 */
import type { Hono } from 'hono';
import { randomUUID } from 'node:crypto';
import { type SteerRequest, steerRun } from '../../application/run/steer-run.ts';
import type { RunRecord } from '../../application/runs/run-record.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { PauseBody, SteerBody, readJson, runIdParam, validateBody } from './bodies.ts';
import { runLinks } from './run-view.ts';

export function steerRoutes(
  app: Hono,
  fabric: Fabric,
  show: (runId: string) => Promise<RunRecord>,
  log: (line: string) => void,
): {
  readonly unpause: (runId: string, viewerHeader?: string | undefined) => Promise<Response | null>;
} {
  const post = async (runId: string, request: SteerRequest) =>
    steerRun(
      { show, inboxes: fabric.runInboxes, approvals: fabric.approvals, newId: () => randomUUID() },
      runId,
      request,
    );

  app.post('/:id/messages', async (c) => {
    const id = runIdParam(c.req.param('id'));
    const body = validateBody(SteerBody, await readJson(c.req.raw));
    const accepted = await post(id, {
      kind: 'message',
      text: body.text,
      mode: body.mode,
      channel: channelOf(c.req.header('x-fabric-viewer')),
      ...(body.expected_step === undefined ? {} : { expectedStep: body.expected_step }),
    });
    log(`run ${accepted.run_id}: ${body.mode} message ${accepted.id}`);
    return c.json({ ...accepted, mode: body.mode, links: runLinks(accepted.run_id) }, 202);
  });

  app.post('/:id/pause', async (c) => {
    const id = runIdParam(c.req.param('id'));
    validateBody(PauseBody, await readJson(c.req.raw));
    const accepted = await post(id, {
      kind: 'pause',
      channel: channelOf(c.req.header('x-fabric-viewer')),
    });
    log(`run ${accepted.run_id} paused`);
    return c.json({ ...accepted, status: 'paused' as const, links: runLinks(accepted.run_id) }, 202);
  });

  return {
    /** A running run's resume is the end of its pause; null: it is not running (a §18 resume). */
    unpause: async (runId, viewerHeader) => {
      const record = await show(runId).catch(() => null);
      if (record === null || record.status !== 'running') return null;
      const accepted = await post(runId, { kind: 'unpause', channel: channelOf(viewerHeader) });
      log(`run ${accepted.run_id} continues`);
      return Response.json(
        { ...accepted, status: 'running', links: runLinks(accepted.run_id) },
        { status: 202 },
      );
    },
  };
}

/** `viewer` for the run viewer's own actions (its header), else `http`. */
function channelOf(viewerHeader: string | undefined): string {
  return viewerHeader === '1' ? 'viewer' : 'http';
}

/**
 * `/v1/approvals` and `/v1/grants` (SPEC §19, ADR 0017): the approvals a policy `ask` rule waits
 * for, answered here as through every other channel (the first answer wins; a second gets 409),
 * and the grants a lasting answer leaves. `onAnswered` hears each answer given here (the server
 * resumes a parked run with it).
 */
import { Hono } from 'hono';
import * as v from 'valibot';
import {
  MAX_GRANT_EXPIRY_S,
  MAX_GRANT_EXPIRY_TEXT,
  answerApproval,
} from '../../application/approvals/answer-approval.ts';
import type { ApprovalRecord, ApprovalState } from '../../domain/approvals.ts';
import type { Fabric } from '../../composition/fabric.ts';
import { ApiError } from './api-error.ts';
import { FabricError } from '../../domain/errors.ts';
import type { AuthVariables } from './auth.ts';
import { invalidRequest, mismatch, readJson, validateBody } from './bodies.ts';
import type { ApprovalFeed, ApprovalFeedEvent } from './approval-feed.ts';
import { sseResponse } from './sse.ts';

export const AnswerBody = v.strictObject({
  decision: v.picklist(['approve', 'deny']),
  scope: v.optional(v.picklist(['once', 'run', 'specialist'])),
  /** Index into the approval's `proposals`; default 0 (the exact call). */
  pattern: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  message: v.optional(v.pipe(v.string(), v.maxLength(4000))),
  /** Seconds a lasting grant holds (at most 10 years); default until revoked. */
  expires_in_s: v.optional(
    v.pipe(
      v.number(),
      v.integer(),
      v.minValue(1),
      v.check((seconds) => seconds <= MAX_GRANT_EXPIRY_S, `must be ${MAX_GRANT_EXPIRY_TEXT}`),
    ),
  ),
  /** Who answers, as the client names them (shown in approval_decided). */
  by: v.optional(v.pipe(v.string(), v.maxLength(200))),
});

const STATES: readonly string[] = ['pending', 'approved', 'denied', 'expired', 'cancelled', 'all'];
/** `GET /v1/grants?state=`: the grants in force (default), or all, revoked and expired too. */
const GRANT_STATES: readonly string[] = ['active', 'all'];
/** The ids the fabric makes (`apr_…`, `grt_…`): nothing else reaches the store. */
const ID_FORMS = { approval: /^apr_[A-Za-z0-9]{1,40}$/, grant: /^grt_[A-Za-z0-9]{1,40}$/ } as const;

export function approvalRoutes(
  fabric: Fabric,
  options: {
    readonly log: (line: string) => void;
    /** The channel answers here are recorded as (`http`, or `viewer` for the viewer's own route). */
    readonly onAnswered?: (record: ApprovalRecord) => void;
    /** The stream of every approval asked and answered (`GET /v1/approvals/events`). */
    readonly feed?: ApprovalFeed;
  },
): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();
  const store = fabric.approvals;

  app.get('/approvals', async (c) => {
    const state = stateParam(c.req.query('state'), STATES, 'pending');
    const run = c.req.query('run');
    const approvals = await store.list({
      state: state === 'all' ? undefined : (state as ApprovalState),
      runId: run,
    });
    // Files of the store that are not whole: left out of the list, named with what to do.
    return c.json({ approvals, unreadable: await store.unreadable() });
  });

  app.get('/approvals/events', (c) => {
    const feed = options.feed;
    if (feed === undefined) throw new ApiError('not_found', 'This server has no approvals stream.');
    const run = c.req.query('run');
    return sseResponse<ApprovalFeedEvent>(
      (send) => {
        let stop: (() => void) | undefined;
        let gone = false;
        void feed
          .listen((event) => {
            if (run === undefined || event.approval.run_id === run) send(event);
          })
          .then((unlisten) => {
            if (gone) unlisten();
            else stop = unlisten;
          });
        return () => {
          gone = true;
          stop?.();
        };
      },
      // It never ends by itself: approvals come as long as the server runs.
      () => false,
    );
  });

  app.get('/approvals/:id', async (c) => {
    const id = idParam(c.req.param('id'), 'approval');
    const record = await store.get(id);
    if (record === undefined) throw notFound(id, 'approval');
    return c.json(record);
  });

  app.post('/approvals/:id', async (c) => {
    const id = idParam(c.req.param('id'), 'approval');
    const body = validateBody(AnswerBody, await readJson(c.req.raw));
    const channel = c.req.header('x-fabric-viewer') === '1' ? 'viewer' : 'http';
    const record = await answerApproval(
      store,
      id,
      {
        decision: body.decision,
        scope: body.scope,
        pattern: body.pattern,
        message: body.message,
        expiresInS: body.expires_in_s,
        channel,
        by: body.by,
      },
      new Date(),
    );
    options.log(`approval ${record.id} ${record.state} (${channel}) for run ${record.run_id}`);
    options.onAnswered?.(record);
    return c.json(record);
  });

  app.get('/grants', async (c) => {
    const all = stateParam(c.req.query('state'), GRANT_STATES, 'active') === 'all';
    return c.json({ grants: await store.grants({ all, specialist: c.req.query('specialist') }) });
  });

  app.delete('/grants/:id', async (c) => {
    const grant = await store.revoke(idParam(c.req.param('id'), 'grant'), new Date().toISOString());
    options.log(`grant ${grant.id} revoked`);
    return c.json(grant);
  });

  return app;
}

/**
 * Checks `:id`. One that is not an id the fabric makes is one this runs directory does not have:
 * 404, as for an unknown one (docs/http-api.md), and never a path given to the store.
 */
function idParam(id: string, kind: 'approval' | 'grant'): string {
  if (!ID_FORMS[kind].test(id)) throw notFound(id, kind);
  return id;
}

/** The 404 for an approval or grant this runs directory does not have. */
function notFound(id: string, kind: 'approval' | 'grant'): FabricError {
  const grant = kind === 'grant';
  return new FabricError(
    'approval_not_found',
    `No ${kind} "${id}" in this runs directory. ${grant ? 'GET /v1/grants lists the grants in force' : 'GET /v1/approvals?state=all lists them'} (fabric approvals list${grant ? ' --grants' : ''}).`,
    { details: { [kind]: id } },
  );
}

/** The `state` query parameter: one of `states`, else 400 with the issue. */
function stateParam(value: string | undefined, states: readonly string[], fallback: string): string {
  if (value === undefined) return fallback;
  if (!states.includes(value))
    throw invalidRequest([
      mismatch(
        'state',
        `one of ${states.slice(0, -1).join(', ')} or ${states.at(-1)}`,
        JSON.stringify(value),
      ),
    ]);
  return value;
}

import { afterEach, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { pendingApproval } from '../../support/approval-fixture.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type ErrorBody, makeFabric } from './http-harness.ts';

/** Requests to `/v1/approvals` and `/v1/grants` that do not fit: answered 400 or 404, nothing written. */
describe('/v1/approvals and /v1/grants refuse what does not fit', () => {
  let sandbox: Sandbox | undefined;
  let fabric: Fabric | undefined;
  afterEach(async () => {
    await fabric?.close();
    await sandbox?.cleanup();
  });

  async function setUp() {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    await fabric.approvals.create(pendingApproval('apr_request0001', 'run-a', 'cargo tree'));
    const app = createApp({ fabric, requireToken: false });
    const request = async (method: string, path: string, body?: unknown) => {
      const response = await app.request(path, {
        method,
        ...(body === undefined
          ? {}
          : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as ErrorBody };
    };
    return { request, approvals: fabric.approvals };
  }

  it('refuses an expires_in_s past 10 years with 400 invalid_request naming the limit, and grants nothing', async () => {
    const { request, approvals } = await setUp();
    for (const expires of [1e308, 315_360_001]) {
      const refused = await request('POST', '/v1/approvals/apr_request0001', {
        decision: 'approve',
        scope: 'specialist',
        expires_in_s: expires,
      });
      expect(refused.status).toBe(400);
      expect(refused.body.error).toEqual({
        code: 'invalid_request',
        message: `expires_in_s: expected at most 10 years (3650d, 315360000 seconds), found ${expires}.`,
        issues: [
          {
            path: 'expires_in_s',
            expected: 'at most 10 years (3650d, 315360000 seconds)',
            found: String(expires),
            message: expect.any(String),
          },
        ],
      });
    }
    expect((await approvals.get('apr_request0001'))?.state).toBe('pending');
    expect(await approvals.grants({ all: true })).toEqual([]);
    const granted = await request('POST', '/v1/approvals/apr_request0001', {
      decision: 'approve',
      scope: 'specialist',
      expires_in_s: 315_360_000,
    });
    expect(granted.status).toBe(200);
  });

  it('answers 404 approval_not_found for an unknown id, a malformed one included, and reads no path', async () => {
    const { request } = await setUp();
    for (const [method, path] of [
      ['GET', '/v1/approvals/nope'],
      ['GET', '/v1/approvals/apr_'],
      ['GET', '/v1/approvals/apr_zzzzzzzzzzzz'],
      ['GET', '/v1/approvals/..%2F..%2Fetc'],
      ['POST', '/v1/approvals/nope'],
      ['POST', '/v1/approvals/apr_zzzzzzzzzzzz'],
      ['DELETE', '/v1/grants/nope'],
      ['DELETE', '/v1/grants/grt_'],
      ['DELETE', '/v1/grants/grt_zzzzzzzzzzzz'],
    ] as const) {
      const answer = await request(method, path, method === 'POST' ? { decision: 'approve' } : undefined);
      expect({ path, method, status: answer.status, code: answer.body.error.code }).toEqual({
        path,
        method,
        status: 404,
        code: 'approval_not_found',
      });
      expect(answer.body.error.message).toMatch(
        /^No (approval|grant) ".*" in (this runs directory|\/.*\.approvals)\. /,
      );
    }
  });

  it('refuses a state it does not know, on approvals and grants alike, with the issue', async () => {
    const { request } = await setUp();
    const approvals = await request('GET', '/v1/approvals?state=bogus');
    expect(approvals.status).toBe(400);
    expect(approvals.body.error).toEqual({
      code: 'invalid_request',
      message: 'state: expected one of pending, approved, denied, expired, cancelled or all, found "bogus".',
      issues: [
        {
          path: 'state',
          expected: 'one of pending, approved, denied, expired, cancelled or all',
          found: '"bogus"',
          message:
            'state: expected one of pending, approved, denied, expired, cancelled or all, found "bogus".',
        },
      ],
    });
    const grants = await request('GET', '/v1/grants?state=bogus');
    expect(grants.status).toBe(400);
    expect(grants.body.error).toEqual({
      code: 'invalid_request',
      message: 'state: expected one of active or all, found "bogus".',
      issues: [
        {
          path: 'state',
          expected: 'one of active or all',
          found: '"bogus"',
          message: 'state: expected one of active or all, found "bogus".',
        },
      ],
    });
    for (const path of [
      '/v1/grants',
      '/v1/grants?state=active',
      '/v1/grants?state=all',
      '/v1/approvals?state=all',
    ])
      expect((await request('GET', path)).status).toBe(200);
  });
});

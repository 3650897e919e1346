import { afterEach, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { pendingApproval } from '../../support/approval-fixture.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { makeFabric } from './http-harness.ts';

interface ErrorBody {
  readonly error: {
    readonly code: string;
    readonly message: string;
    readonly issues?: readonly { path: string; expected?: string; found?: string; message: string }[];
  };
}

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
});

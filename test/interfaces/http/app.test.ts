import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FabricErrorCode } from '../../../src/domain/errors.ts';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { isLoopbackHost } from '../../../src/interfaces/http/auth.ts';
import { httpStatusFor } from '../../../src/interfaces/http/status.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { makeFabric } from './http-harness.ts';

// Nothing listens on port 9: every backend is down, and no test here opens a socket of its own.
const CLOSED = 'http://127.0.0.1:9';
const json = { 'content-type': 'application/json' };

describe('the HTTP API without a socket', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, CLOSED);
  });
  afterAll(async () => {
    await sandbox.cleanup();
  });

  const app = () => createApp({ fabric, requireToken: false });

  it('answers an unknown route with a JSON 404 not_found', async () => {
    const response = await app().request('/v1/nope');
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('rejects a run without a task with 400 invalid_request that names the key', async () => {
    const response = await app().request('/v1/runs', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ specialist: 'units' }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { error: { code: string; issues: { path: string }[] } };
    expect(body.error.code).toBe('invalid_request');
    expect(body.error.issues.map((issue) => issue.path)).toEqual(['task']);
  });

  it('rejects unknown keys, a bad max_steps, a relative workspace, bad JSON and a body that is not JSON', async () => {
    const post = (body: string, headers: Record<string, string> = json) =>
      app().request('/v1/runs', { method: 'POST', headers, body });
    const cases = [
      await post(JSON.stringify({ specialist: 'units', task: 't', maxSteps: 3 })),
      await post(JSON.stringify({ specialist: 'units', task: 't', max_steps: 0 })),
      await post(JSON.stringify({ specialist: 'units', task: 't', workspace: 'rel/dir' })),
      await post('{"specialist":'),
      await post(JSON.stringify({ specialist: 'units', task: 't' }), { 'content-type': 'text/plain' }),
    ];
    for (const response of cases) {
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ error: { code: 'invalid_request' } });
    }
  });

  it('answers every bad body in one shape: a message that reads alone, and every problem at once in issues', async () => {
    const post = async (body: unknown) => {
      const response = await app().request('/v1/runs', {
        method: 'POST',
        headers: json,
        body: JSON.stringify(body),
      });
      expect(response.status).toBe(400);
      return ((await response.json()) as { error: Record<string, unknown> }).error;
    };
    expect(await post({ specialist: 'units', task: 't', maxSteps: 3 })).toEqual({
      code: 'invalid_request',
      message:
        'maxSteps: expected a known key (specialist, task, workspace, model or max_steps), found an unknown key. Did you mean "max_steps"?',
      issues: [
        {
          path: 'maxSteps',
          expected: 'a known key (specialist, task, workspace, model or max_steps)',
          found: 'an unknown key',
          message: expect.stringContaining('Did you mean "max_steps"?'),
        },
      ],
    });
    const many = await post({
      specialist: 'units',
      task: ' ',
      max_steps: 2.5,
      workspace: 'rel/dir',
      mdoel: 'x',
    });
    expect(many.message).toBe(
      'task: expected a non-empty string, found "". ' +
        'workspace: expected an absolute path on the server, found "rel/dir". ' +
        'max_steps: expected a whole number, found 2.5. ' +
        'mdoel: expected a known key (specialist, task, workspace, model or max_steps), found an unknown key. Did you mean "model"?',
    );
    expect(many.issues).toEqual([
      { path: 'task', expected: 'a non-empty string', found: '""', message: expect.any(String) },
      {
        path: 'workspace',
        expected: 'an absolute path on the server',
        found: '"rel/dir"',
        message: expect.any(String),
      },
      { path: 'max_steps', expected: 'a whole number', found: '2.5', message: expect.any(String) },
      {
        path: 'mdoel',
        expected: expect.stringContaining('a known key'),
        found: 'an unknown key',
        message: expect.any(String),
      },
    ]);
    expect(await post({ task: 3, max_steps: '3' })).toMatchObject({
      message:
        'specialist: expected a value (it is required), found nothing. task: expected a string, found 3. max_steps: expected a number, found "3".',
    });
    expect(await post(['not', 'an', 'object'])).toMatchObject({
      message: 'body: expected a JSON object, found a list.',
      issues: [{ path: 'body', expected: 'a JSON object', found: 'a list' }],
    });
    // A typo far from every key gets no guess.
    expect((await post({ specialist: 'units', task: 't', zzzzzz: 1 })).message).not.toContain('Did you mean');
  });

  it('answers a bad query parameter and a body that is not JSON in the same shape', async () => {
    const limit = await app().request('/v1/runs?limit=abc');
    expect(limit.status).toBe(400);
    expect(await limit.json()).toEqual({
      error: {
        code: 'invalid_request',
        message: 'limit: expected a whole number from 1 to 1000, found "abc".',
        issues: [
          {
            path: 'limit',
            expected: 'a whole number from 1 to 1000',
            found: '"abc"',
            message: expect.any(String),
          },
        ],
      },
    });
    const text = await app().request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{}',
    });
    expect(((await text.json()) as { error: { message: string } }).error.message).toBe(
      'body: expected JSON sent with Content-Type: application/json, found Content-Type text/plain.',
    );
  });

  it('refuses a body over 1 MiB with 413 payload_too_large', async () => {
    const response = await app().request('/v1/runs', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ specialist: 'units', task: 'x'.repeat(1024 * 1024 + 1) }),
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: 'payload_too_large' } });
  });

  it('answers 404 specialist_unknown for a specialist the config does not define', async () => {
    const response = await app().request('/v1/runs', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ specialist: 'nobody', task: 'anything' }),
    });
    expect(response.status).toBe(404);
    expect(await response.json()).toMatchObject({ error: { code: 'specialist_unknown' } });
  });

  it('answers 503 backend_unavailable when no backend answers, before any run starts', async () => {
    const response = await app().request('/v1/runs', {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ specialist: 'units', task: 'Convert 3 km' }),
    });
    expect(response.status).toBe(503);
    // Every backend is down, so resolution fails before a run exists: start a server, not load a model.
    expect(await response.json()).toMatchObject({
      error: { code: 'backend_unavailable', message: expect.stringContaining('No model server answered') },
    });
    const list = (await (await app().request('/v1/runs')).json()) as { runs: unknown[] };
    expect(list.runs).toEqual([]);
  });

  it('answers 503 model_not_found when a server answers but has no usable model', async () => {
    const lm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'text-embedding-nomic-embed-text-v1.5', type: 'embedding' }],
    });
    try {
      const withServer = createApp({ fabric: await makeFabric(sandbox, lm.url), requireToken: false });
      const response = await withServer.request('/v1/runs', {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ specialist: 'units', task: 'Convert 3 km' }),
      });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({
        error: { code: 'model_not_found', message: expect.stringContaining('No tool-capable chat model') },
      });
      expect(lm.chatRequests()).toHaveLength(0);
    } finally {
      await lm.stop();
    }
  });

  it('answers 404 run_not_found for an unknown run, and never reads a path given as a run id', async () => {
    for (const path of [
      '/v1/runs/20990101T000000Z-abcdef',
      '/v1/runs/..%2F..%2Fetc',
      '/v1/runs/x.jsonl/runlog',
    ]) {
      const response = await app().request(path);
      expect(response.status).toBe(404);
      const body = (await response.json()) as { error: { code: string } };
      expect(body.error.code).toBe('run_not_found');
    }
    const cancel = await app().request('/v1/runs/20990101T000000Z-abcdef/cancel', { method: 'POST' });
    expect(cancel.status).toBe(404);
  });

  it('lists the specialists of the config', async () => {
    const body = (await (await app().request('/v1/specialists')).json()) as {
      specialists: { name: string }[];
    };
    expect(body.specialists.map((s) => s.name)).toEqual(['units']);
  });

  it('reports the backends as down in health, and models with the reason no model would be chosen', async () => {
    const health = (await (await app().request('/v1/health')).json()) as {
      usable: boolean;
      backends: { state: string }[];
    };
    expect(health.usable).toBe(false);
    expect(health.backends.every((backend) => backend.state === 'down')).toBe(true);
    const models = (await (await app().request('/v1/models')).json()) as {
      chosen: { units: { error: { code: string } } };
    };
    expect(models.chosen.units.error.code).toBeTypeOf('string');
  });

  it('serves the LM indicator and the exports as db_off when the control plane is disabled', async () => {
    const indicator = await (await app().request('/v1/lm-indicator')).json();
    expect(indicator).toMatchObject({ status: 'offline', reason: 'db_off', db_off: true });
    const usage = await (await app().request('/v1/exports/lm_usage_7d')).json();
    expect(usage).toMatchObject({ db_off: true, rows: [] });
    const unknown = await app().request('/v1/exports/lm_everything');
    expect(unknown.status).toBe(404);
  });

  it('refuses a cross-origin request and a Host that is not loopback while on loopback', async () => {
    const crossOrigin = await app().request('/v1/specialists', {
      headers: { origin: 'https://evil.example' },
    });
    expect(crossOrigin.status).toBe(403);
    expect(await crossOrigin.json()).toMatchObject({ error: { code: 'forbidden' } });
    const rebound = await app().request('http://evil.example:8787/v1/specialists');
    expect(rebound.status).toBe(403);
  });
});

describe('bearer token auth', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox();
    fabric = await makeFabric(sandbox, CLOSED);
  });
  afterAll(async () => {
    await sandbox.cleanup();
  });

  const app = () => createApp({ fabric, token: 's3cret-token', requireToken: true });

  it('answers 401 unauthorized without a token and with a wrong one', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 's3cret-token' }]) {
      const response = await app().request('/v1/specialists', { headers });
      expect(response.status).toBe(401);
      expect(response.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await response.json()).toMatchObject({ error: { code: 'unauthorized' } });
    }
  });

  it('accepts the right token, on every route', async () => {
    const response = await app().request('/v1/specialists', {
      headers: { authorization: 'Bearer s3cret-token' },
    });
    expect(response.status).toBe(200);
    const missing = await app().request('/v1/runs/nope', {
      headers: { authorization: 'Bearer s3cret-token' },
    });
    expect(missing.status).toBe(404);
  });

  it('keeps health open without the token, but shows the backends only with it', async () => {
    const open = await app().request('/v1/health');
    expect(open.status).toBe(200);
    expect(await open.json()).toEqual({ ok: true, usable: false });
    const full = (await (
      await app().request('/v1/health', { headers: { authorization: 'Bearer s3cret-token' } })
    ).json()) as { backends: unknown[] };
    expect(full.backends.length).toBeGreaterThan(0);
  });

  it('refuses to build an app that listens beyond loopback without a token', () => {
    expect(() => createApp({ fabric, requireToken: true })).toThrow(/FABRIC_API_TOKEN/);
  });

  it('treats only loopback names as loopback', () => {
    for (const host of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3'])
      expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '192.168.1.2', 'example.com'])
      expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('httpStatusFor', () => {
  it('maps every fabric error code to an error status, and the expected ones to what a client expects', () => {
    const codes: FabricErrorCode[] = [
      'config_invalid',
      'config_not_found',
      'specialist_unknown',
      'pack_load_failed',
      'usage',
      'backend_unavailable',
      'backend_error',
      'model_not_found',
      'model_lacks_tools',
      'context_overflow',
      'run_cancelled',
      'run_not_found',
      'runlog_corrupt',
      'tool_failed',
      'sandbox_violation',
      'workspace_too_large',
      'internal',
    ];
    for (const code of codes) expect(httpStatusFor(code)).toBeGreaterThanOrEqual(400);
    expect(httpStatusFor('specialist_unknown')).toBe(404);
    expect(httpStatusFor('run_not_found')).toBe(404);
    expect(httpStatusFor('model_not_found')).toBe(503);
    expect(httpStatusFor('run_not_active')).toBe(409);
    expect(httpStatusFor('unauthorized')).toBe(401);
    expect(httpStatusFor('invalid_request')).toBe(400);
  });
});

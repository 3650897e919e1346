import { access } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import type { RunEventInput } from '../../../src/domain/run-events.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { succeededRun, writeRunlog } from '../../infrastructure/control/fixtures.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type ErrorBody, makeFabric } from './http-harness.ts';

/**
 * `/v1/runs/:id/messages`, `/pause` and `/resume` (SPEC §19) refuse a request that does not fit
 * before they look at the run, whatever its state, and write nothing to its inbox.
 */
describe('steering requests that do not fit', () => {
  let sandbox: Sandbox | undefined;
  let fabric: Fabric | undefined;
  afterEach(async () => {
    await fabric?.close();
    await sandbox?.cleanup();
  });

  async function setUp() {
    sandbox = await makeSandbox();
    const at = new Date().toISOString();
    await writeRunlog(sandbox.runsDir, 'done-run', '2026-01-01T00:00:00Z', succeededRun());
    // A run this test's own process owns (alive), at step 1.
    const [start, ...rest] = succeededRun().slice(0, 3);
    await writeRunlog(sandbox.runsDir, 'live-run', at, [
      { ...start, pid: process.pid, host: hostname() } as RunEventInput,
      ...rest,
    ]);
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9');
    const app = createApp({ fabric, requireToken: false });
    const post = async (path: string, body: string) => {
      const response = await app.request(path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      return { status: response.status, body: (await response.json()) as ErrorBody };
    };
    const runsDir = sandbox.runsDir;
    const inboxWritten = (run: string) =>
      access(join(runsDir, run, 'inbox.jsonl')).then(
        () => true,
        () => false,
      );
    return { post, inboxWritten };
  }

  it('refuses a pause with bad JSON or unknown keys, and a resume with a bad body even for a running run', async () => {
    const { post, inboxWritten } = await setUp();
    for (const run of ['live-run', 'done-run']) {
      const badJson = await post(`/v1/runs/${run}/pause`, '{bad');
      expect(badJson.status).toBe(400);
      expect(badJson.body.error.code).toBe('invalid_request');
      expect(badJson.body.error.issues?.[0]).toMatchObject({ path: 'body', expected: 'valid JSON' });
      const unknown = await post(`/v1/runs/${run}/pause`, '{"bogus":1}');
      expect(unknown.status).toBe(400);
      expect(unknown.body.error.issues).toEqual([
        expect.objectContaining({ path: 'bogus', found: 'an unknown key' }),
      ]);
      for (const [body, path, found] of [
        ['{"max_steps":0}', 'max_steps', '0'],
        ['{"force":"yes"}', 'force', '"yes"'],
      ] as const) {
        const resume = await post(`/v1/runs/${run}/resume`, body);
        expect({ run, body, status: resume.status, code: resume.body.error.code }).toEqual({
          run,
          body,
          status: 400,
          code: 'invalid_request',
        });
        expect(resume.body.error.issues).toEqual([expect.objectContaining({ path, found })]);
      }
    }
    expect(await inboxWritten('live-run')).toBe(false);
  });

  it('shows whitespace-only text as it was sent, and says a future expected_step is not reached yet', async () => {
    const { post, inboxWritten } = await setUp();
    const blank = await post('/v1/runs/live-run/messages', '{"text":"   "}');
    expect(blank.status).toBe(400);
    expect(blank.body.error).toEqual({
      code: 'invalid_request',
      message: 'text: expected text, not empty or only whitespace, found "   ".',
      issues: [
        {
          path: 'text',
          expected: 'text, not empty or only whitespace',
          found: '"   "',
          message: 'text: expected text, not empty or only whitespace, found "   ".',
        },
      ],
    });

    const ahead = await post('/v1/runs/live-run/messages', '{"text":"look at damage.rs","expected_step":11}');
    expect(ahead.status).toBe(409);
    expect(ahead.body.error.code).toBe('steer_stale_step');
    expect(ahead.body.error.message).toContain('is at step 1, not 11: step 11 has not been reached yet.');
    expect(ahead.body.error.message).not.toContain('has left');
    const behind = await post('/v1/runs/live-run/messages', '{"text":"look at damage.rs","expected_step":0}');
    expect(behind.status).toBe(409);
    expect(behind.body.error.message).toContain(
      'is at step 1, not 0: the message was written for a state the run has left.',
    );
    expect(await inboxWritten('live-run')).toBe(false);
  });

  it('refuses a run that ended with run_finished, naming no flag resume lacks', async () => {
    const { post } = await setUp();
    for (const path of ['/v1/runs/done-run/messages', '/v1/runs/done-run/pause']) {
      const ended = await post(path, path.endsWith('messages') ? '{"text":"look at damage.rs"}' : '{}');
      expect(ended.status).toBe(409);
      expect(ended.body.error.code).toBe('run_finished');
      expect(ended.body.error.message).toContain('has ended (succeeded)');
      expect(ended.body.error.message).toContain('cannot go on: start a new run');
      expect(ended.body.error.message).not.toContain('--more-steps');
    }
  });

  it('answers 404 run_not_found for a path given as a run id, as for any unknown run', async () => {
    const { post } = await setUp();
    for (const path of [
      '/v1/runs/..%2F..%2Fetc/messages',
      '/v1/runs/..%2F..%2Fetc/pause',
      '/v1/runs/..%2F..%2Fetc/resume',
      '/v1/runs/x.jsonl/messages',
      '/v1/runs/20990101T000000Z-abcdef/messages',
    ]) {
      const missing = await post(path, path.endsWith('messages') ? '{"text":"hello"}' : '{}');
      expect({ path, status: missing.status, code: missing.body.error.code }).toEqual({
        path,
        status: 404,
        code: 'run_not_found',
      });
    }
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { closedPort } from '../../infrastructure/control/pg-test-db.ts';
import { makeFabric } from './http-harness.ts';

describe('POST /v1/runs with the queue on and its database down', () => {
  let sandbox: Sandbox;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox({ queue: 'postgres', control: { enabled: true } });
    const dsn = `postgres://postgres@127.0.0.1:${await closedPort()}/nothing`;
    fabric = await makeFabric(sandbox, 'http://127.0.0.1:9', { FABRIC_DSN: dsn });
  });
  afterAll(async () => {
    await fabric.close();
    await sandbox.cleanup();
  });

  it('answers 503 queue_unavailable saying what to check, and queues nothing', async () => {
    const app = createApp({ fabric, requireToken: false });
    const response = await app.request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'units', task: 'Convert 3 km' }),
    });
    expect(response.status).toBe(503);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('queue_unavailable');
    expect(body.error.message).toMatch(/FABRIC_DSN/);
  }, 30_000);
});

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { makeFabric } from './http-harness.ts';

const json = { 'content-type': 'application/json' };

describe('POST /v1/runs/:id/replay of a runlog that is not a whole run', () => {
  let sandbox: Sandbox;
  let server: FakeLlmServer;
  let fabric: Fabric;
  beforeAll(async () => {
    sandbox = await makeSandbox({
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack` },
        rust: { builder: 'builtin:rust' },
        research: { builder: 'builtin:research' },
      },
    });
    // A model is there: the workspace is what is wrong, not the backend.
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-8b', toolUse: true }],
    });
    fabric = await makeFabric(sandbox, server.url);
  });
  afterAll(async () => {
    await fabric.close();
    await server.stop();
    await sandbox.cleanup();
  });

  const app = () => createApp({ fabric, requireToken: false });

  it.each([
    ['empty', '', /is empty/],
    [
      'future',
      `${JSON.stringify({ v: 99, kind: 'run_start', ts: 'x', run_id: 'r', seq: 1 })}\n`,
      /format v99/,
    ],
    [
      'headless',
      `${JSON.stringify({ v: 1, kind: 'run_end', ts: 'x', run_id: 'r', seq: 9 })}\n`,
      /does not begin with run_start/,
    ],
    ['foreign', 'hello world\n', /not a fabric runlog/],
  ])('answers 422 runlog_corrupt for the replay of an %s runlog', async (name, content, message) => {
    const id = `20260101T000000Z-${name}`;
    await mkdir(join(sandbox.runsDir, id), { recursive: true });
    await writeFile(join(sandbox.runsDir, id, 'runlog.jsonl'), content);
    for (const execute of [false, true]) {
      const response = await app().request(`/v1/runs/${id}/replay`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ execute }),
      });
      expect(response.status).toBe(422);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('runlog_corrupt');
      expect(body.error.message).toMatch(message);
    }
  });
});

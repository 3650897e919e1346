import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fabric } from '../../../src/composition/fabric.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { makeFabric, postJson, startApi } from './http-harness.ts';

const json = { 'content-type': 'application/json' };

describe('POST /v1/runs with a workspace it cannot use', () => {
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
    await writeFile(join(sandbox.dir, 'a file.txt'), 'not a folder');
  });
  afterAll(async () => {
    await fabric.close();
    await server.stop();
    await sandbox.cleanup();
  });

  const app = () => createApp({ fabric, requireToken: false });
  const start = (body: Record<string, unknown>) =>
    app().request('/v1/runs', { method: 'POST', headers: json, body: JSON.stringify(body) });

  it.each(['units', 'rust', 'research'])(
    'answers 400 usage naming the path for a %s run in a workspace that does not exist or is a file',
    async (specialist) => {
      for (const [workspace, problem] of [
        [join(sandbox.dir, 'no such dir ü'), 'does not exist'],
        [join(sandbox.dir, 'a file.txt'), 'is a file, not a directory'],
      ] as const) {
        const response = await start({ specialist, task: 't', workspace });
        expect(response.status).toBe(400);
        const body = (await response.json()) as { error: { code: string; message: string } };
        expect(body.error.code).toBe('usage');
        expect(body.error.message).toContain(`the workspace ${workspace} ${problem}`);
      }
      expect(server.chatRequests()).toEqual([]);
    },
  );
});

describe('two runs on one workspace', () => {
  it('answers 409 workspace_busy to a second POST on a busy workspace, and takes it once the first has ended', async () => {
    const sandbox = await makeSandbox();
    const server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-8b', toolUse: true }],
      script: [
        { hang: true },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'ok', answer: '1' } }] } },
      ],
    });
    const fabric = await makeFabric(sandbox, server.url);
    const api = await startApi(fabric);
    try {
      const first = await postJson(`${api.url}/v1/runs`, {
        specialist: 'units',
        task: 'a',
        workspace: sandbox.dir,
      });
      expect(first.status).toBe(202);
      const { run_id } = (await first.json()) as { run_id: string };

      const second = await postJson(`${api.url}/v1/runs`, {
        specialist: 'units',
        task: 'b',
        workspace: sandbox.dir,
      });
      expect(second.status).toBe(409);
      const body = (await second.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe('workspace_busy');
      expect(body.error.message).toContain(run_id);

      expect((await fetch(`${api.url}/v1/runs/${run_id}/cancel`, { method: 'POST' })).status).toBeLessThan(
        300,
      );
      await api.hub.get(run_id)?.settled;
      const third = await postJson(`${api.url}/v1/runs`, {
        specialist: 'units',
        task: 'c',
        workspace: sandbox.dir,
      });
      expect(third.status).toBe(202);
    } finally {
      await api.stop();
      await fabric.close();
      await server.stop();
      await sandbox.cleanup();
    }
  });
});

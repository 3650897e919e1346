import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import { createFabric, loadConfig } from '../../../src/index.ts';
import { createFabricMcpServer } from '../../../src/interfaces/mcp/fabric-mcp-server.ts';
import { type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

describe('get_run', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('shows a run that only the control plane holds (a worker ran it on another host; issue 21)', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'm', toolUse: true }],
      script: [],
    });
    sandbox = await makeSandbox({ control: { enabled: true } });
    const config = await loadConfig({
      configPath: sandbox.configPath,
      cwd: sandbox.dir,
      env: testEnv(sandbox, server.url),
    });
    const fabric = createFabric(config);
    try {
      const store = await fabric.controlStore();
      const runId = '20300101T100000Z-elsewhere';
      const start = {
        v: 1,
        ts: new Date().toISOString(),
        run_id: runId,
        seq: 1,
        kind: 'run_start',
        specialist: 'units',
        task: 'Convert 3 km to miles',
        model: 'm',
        backend: 'lm_studio',
        workspace: null,
        config_digest: 'abc',
        fabric_version: '0.1.0',
        max_steps: 30,
        budget_s: 600,
        pid: 4242,
        host: 'another-host',
      } as RunEvent;
      await store?.write({ events: [start], modelCalls: [] });

      const mcp = createFabricMcpServer({
        registry: fabric.registry,
        catalog: fabric.catalog,
        run: (request) => fabric.run(request),
        resume: (request) => fabric.resume(request),
        runs: fabric.runReadModel(),
        approvals: fabric.approvals,
      });
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await mcp.connect(serverSide);
      const client = new Client({ name: 'test-client', version: '1.0.0' });
      await client.connect(clientSide);
      const found = await client.callTool({ name: 'get_run', arguments: { run_id: runId } });
      expect(found.isError).not.toBe(true);
      expect(found.structuredContent).toMatchObject({
        run_id: runId,
        status: 'running',
        specialist: 'units',
        task: 'Convert 3 km to miles',
        model: 'm',
        runlog: null,
      });
      const missing = await client.callTool({ name: 'get_run', arguments: { run_id: 'no-such-run' } });
      expect(missing.isError).toBe(true);
      await client.close();
    } finally {
      await fabric.close();
    }
  });
});

import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { runCli } from '../../../src/interfaces/cli/cli.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { postJson, readSse } from './http-harness.ts';

describe('fabric serve', () => {
  let sandbox: Sandbox;
  let llm: FakeLlmServer | undefined;
  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await llm?.stop();
    await sandbox.cleanup();
  });

  it('refuses to listen on 0.0.0.0 without a token, and says how to set one', async () => {
    const result = await runFabricInProcess(
      ['serve', '--host', '0.0.0.0', '--port', '0', '--config', sandbox.configPath],
      {
        env: testEnv(sandbox, 'http://127.0.0.1:9'),
        cwd: sandbox.dir,
      },
    );
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/Refusing to listen on 0\.0\.0\.0 without a bearer token/);
    expect(result.stderr).toContain('FABRIC_API_TOKEN');
  });

  it('lists the routes in its help', async () => {
    const result = await runFabricInProcess(['serve', '--help'], { env: {}, cwd: sandbox.dir });
    expect(result.exitCode).toBe(0);
    for (const route of ['POST /v1/runs', 'GET  /v1/runs/:id/events', 'POST /v1/runs/:id/cancel', '/mcp'])
      expect(result.stdout).toContain(route);
  });

  it('prints its URL, and on stop cancels the runs in progress after each has written its run_end', async () => {
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [{ hang: true }],
    });
    const controller = new AbortController();
    let stderr = '';
    let onListening: (url: string) => void = () => {};
    const listening = new Promise<string>((resolve) => {
      onListening = resolve;
    });
    const exit = runCli(['serve', '--port', '0', '--config', sandbox.configPath], {
      stdout: { write: () => true },
      stderr: {
        write: (text: string) => {
          stderr += text;
          const url = /listening on (http:\/\/\S+)/.exec(stderr)?.[1];
          if (url) onListening(url);
          return true;
        },
      },
      env: testEnv(sandbox, llm.url),
      cwd: sandbox.dir,
      signal: controller.signal,
    });
    const url = await listening;
    const started = await postJson(`${url}/v1/runs`, { specialist: 'units', task: 'Convert 3 km' });
    const { run_id } = (await started.json()) as { run_id: string };
    await readSse(await fetch(`${url}/v1/runs/${run_id}/events`), (frame) => frame.event === 'llm_request');

    controller.abort(new Error('SIGTERM'));
    expect(await exit).toBe(0);
    expect(stderr).toContain('cancelling 1 run in progress');
    expect(stderr).toContain('stopped');
    const path = `${sandbox.runsDir}/${run_id}/runlog.jsonl`;
    const events = parseRunlog(await readFile(path, 'utf8'), path).events;
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
  });
});

import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { stepsResponder } from '../../support/steps-responder.ts';
import { until } from '../../support/until.ts';
import { postJson } from '../http/http-harness.ts';

const PROMTOOL = '/usr/bin/promtool';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('fabric worker with worker.metrics_port', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>> | undefined;
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const procs: ReturnType<typeof spawnFabric>[] = [];
  afterEach(async () => {
    for (const proc of procs) proc.kill('SIGTERM');
    await Promise.all(procs.map((proc) => proc.catch(() => {})));
    await llm?.stop();
    await sandbox?.cleanup();
    await db?.drop();
  }, 30_000);

  it('serves its runs, the queue depth and the workers alive on loopback; promtool accepts the text', async () => {
    db = await createTestDatabase();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });
    const metricsPort = await freePort();
    sandbox = await makeSandbox({
      control: { enabled: true },
      queue: 'postgres',
      worker: { heartbeat_s: 0.3, dead_after_s: 2, metrics_port: metricsPort },
    });
    const env = testEnv(sandbox, llm.url, { FABRIC_DSN: db.dsn });
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    const worker = spawnFabric(['worker', '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    procs.push(worker, serve);
    let serveLog = '';
    let workerLog = '';
    serve.stderr?.on('data', (chunk: Buffer) => {
      serveLog += chunk.toString();
    });
    worker.stderr?.on('data', (chunk: Buffer) => {
      workerLog += chunk.toString();
    });
    const url = await until(
      'the server to listen',
      async () => /listening on (http:\/\/\S+)/.exec(serveLog)?.[1],
    );
    const metricsUrl = await until(
      'the worker metrics',
      async () => /metrics on (http:\/\/\S+)/.exec(workerLog)?.[1],
    );
    expect(metricsUrl).toBe(`http://127.0.0.1:${metricsPort}/metrics`);

    const started = await postJson(`${url}/v1/runs`, { specialist: 'units', task: 'Convert 3 km to miles' });
    const { run_id } = (await started.json()) as { run_id: string };
    await until(`run ${run_id} to end`, async () => {
      const { status } = (await (await fetch(`${url}/v1/runs/${run_id}`)).json()) as { status: string };
      return status === 'queued' || status === 'running' ? undefined : status;
    });
    const text = await until('the run counted', async () => {
      const body = await (await fetch(metricsUrl)).text();
      return body.includes('fabric_runs_total{status="succeeded",specialist="units"} 1') ? body : undefined;
    });
    expect(text).toMatch(/^fabric_steps_total\{specialist="units"\} [1-9]\d*$/m);
    expect(text).toMatch(/^fabric_tool_calls_total\{tool="convert_units",outcome="ok"\} [1-9]\d*$/m);
    expect(text).toMatch(/^fabric_queue_depth 0$/m);
    expect(text).toMatch(/^fabric_workers_alive 1$/m);
    const scraped = await fetch(metricsUrl);
    expect(scraped.headers.get('content-type')).toContain('text/plain');
    await scraped.text();
    expect((await fetch(`http://127.0.0.1:${metricsPort}/v1/runs`)).status).toBe(404);

    const metricsFile = join(sandbox.dir, 'metrics.txt');
    await writeFile(metricsFile, text);
    const check = await execa(PROMTOOL, ['check', 'metrics'], { inputFile: metricsFile, reject: false });
    expect(check.exitCode, `${check.stdout}${check.stderr}`).toBe(0);
  }, 90_000);
});

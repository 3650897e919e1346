import { get as httpGet } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { freePort, promtoolCheck } from '../../support/metrics-checks.ts';
import { listeningOn } from '../../support/served.ts';
import { stepsResponder } from '../../support/steps-responder.ts';
import { until } from '../../support/until.ts';
import { postJson } from '../http/http-harness.ts';

/** GET /metrics with the Host header a DNS-rebinding page would send. */
function statusWithHost(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const request = httpGet({ host: '127.0.0.1', port, path: '/metrics', headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode);
    });
    request.on('error', reject);
  });
}

describe('fabric serve and fabric worker on the queue: /metrics', () => {
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

  it('the server and the worker serve the queue depth and the workers alive, as the control plane has them; promtool accepts both', async () => {
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
    procs.push(serve);
    const { url } = await listeningOn(serve);

    // No worker yet: the run waits in the queue, and the server's /metrics says so.
    const started = await postJson(`${url}/v1/runs`, { specialist: 'units', task: 'Convert 3 km to miles' });
    const { run_id } = (await started.json()) as { run_id: string };
    const waiting = await (await fetch(`${url}/metrics`)).text();
    expect(waiting).toMatch(/^fabric_queue_depth 1$/m);
    expect(waiting).toMatch(/^fabric_workers_alive 0$/m);

    const worker = spawnFabric(['worker', '--config', sandbox.configPath], { env, cwd: sandbox.dir });
    procs.unshift(worker);
    let workerLog = '';
    worker.stderr?.on('data', (chunk: Buffer) => {
      workerLog += chunk.toString();
    });
    const metricsUrl = await until(
      'the worker metrics',
      async () => /metrics on (http:\/\/\S+)/.exec(workerLog)?.[1],
    );
    expect(metricsUrl).toBe(`http://127.0.0.1:${metricsPort}/metrics`);

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
    // Loopback only: a page that rebinds its own name to 127.0.0.1 is refused.
    expect(await statusWithHost(metricsPort, 'evil.example')).toBe(403);

    // The server reads the same counts at its own scrape.
    const served = await (await fetch(`${url}/metrics`)).text();
    expect(served).toMatch(/^fabric_queue_depth 0$/m);
    expect(served).toMatch(/^fabric_workers_alive 1$/m);

    for (const [name, body] of [
      ['worker', text],
      ['serve', served],
    ] as const) {
      const check = await promtoolCheck(sandbox.dir, `metrics-${name}.txt`, body);
      expect(check.exitCode, `${name}: ${check.output}`).toBe(0);
    }
  }, 90_000);
});

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { freePort, promtoolCheck } from '../../support/metrics-checks.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn, runToEnd } from '../../support/served.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const PROMETHEUS = '/usr/bin/prometheus';

/** Asks Prometheus until the query has a result (it scrapes every second). */
async function query(
  prometheus: string,
  promql: string,
): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  for (let attempt = 0; attempt < 300; attempt++) {
    const answer = await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(promql)}`).catch(
      () => null,
    );
    if (answer?.ok) {
      const body = (await answer.json()) as {
        data: { result: { metric: Record<string, string>; value: [number, string] }[] };
      };
      if (body.data.result.length > 0) return body.data.result;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`Prometheus never answered ${promql}`);
}

describe('/metrics on fabric serve, scraped by a real Prometheus', () => {
  let llm: FakeLlmServer;
  let sandbox: Sandbox;
  const children: { kill(signal?: NodeJS.Signals): boolean; then: PromiseLike<unknown>['then'] }[] = [];

  beforeEach(async () => {
    sandbox = await makeSandbox();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
  });
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGTERM');
      await Promise.resolve(child).catch(() => undefined);
    }
    await llm.stop();
    await sandbox.cleanup();
  });

  it('counts runs, steps, tokens, latency and tool calls; promtool accepts the text; Prometheus scrapes and answers', async () => {
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env: testEnv(sandbox, llm.url),
      cwd: sandbox.dir,
    });
    children.push(serve);
    const { url } = await listeningOn(serve);
    const run = await runToEnd(url, { specialist: 'units', task: 'Convert 3 km to miles' });
    expect(run.status).toBe('succeeded');

    const scraped = await fetch(`${url}/metrics`);
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toContain('text/plain');
    const text = await scraped.text();
    expect(text).toContain('fabric_runs_total{status="succeeded",specialist="units"} 1');
    expect(text).toContain('fabric_steps_total{specialist="units"} 3');
    expect(text).toContain(`fabric_tokens_total{model="${MODEL}",kind="input"} 450`);
    expect(text).toContain(`fabric_tokens_total{model="${MODEL}",kind="output"} 36`);
    expect(text).toContain(
      `fabric_model_request_duration_seconds_count{model="${MODEL}",provider="lm_studio"} 3`,
    );
    expect(text).toContain('fabric_tool_calls_total{tool="convert_units",outcome="ok"} 1');
    const check = await promtoolCheck(sandbox.dir, 'metrics.txt', text);
    expect(check.exitCode, check.output).toBe(0);

    const target = new URL(url);
    const promPort = await freePort();
    const configFile = join(sandbox.dir, 'prometheus.yml');
    await writeFile(
      configFile,
      `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: fabric\n    static_configs:\n      - targets: ['${target.host}']\n`,
    );
    const prometheus = execa(
      PROMETHEUS,
      [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(sandbox.dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
      ],
      { reject: false },
    );
    children.push(prometheus);
    const promUrl = `http://127.0.0.1:${promPort}`;
    const runs = await query(promUrl, 'fabric_runs_total{job="fabric"}');
    expect(runs.map((sample) => [sample.metric.status, sample.metric.specialist, sample.value[1]])).toEqual([
      ['succeeded', 'units', '1'],
    ]);
    const tokens = await query(promUrl, 'sum by (kind) (fabric_tokens_total)');
    expect(Object.fromEntries(tokens.map((sample) => [sample.metric.kind, sample.value[1]]))).toEqual({
      input: '450',
      output: '36',
    });
  });

  it('asks for the bearer token on /metrics when the server has one', async () => {
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env: testEnv(sandbox, llm.url, { FABRIC_API_TOKEN: 'secret-token' }),
      cwd: sandbox.dir,
    });
    children.push(serve);
    const { url } = await listeningOn(serve);
    expect((await fetch(`${url}/metrics`)).status).toBe(401);
    const allowed = await fetch(`${url}/metrics`, { headers: { authorization: 'Bearer secret-token' } });
    expect(allowed.status).toBe(200);
    expect(await allowed.text()).toContain('# TYPE fabric_runs_total counter');
  });
});

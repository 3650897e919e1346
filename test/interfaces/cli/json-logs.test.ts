import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { DAEMON_CONFIG, daemonRepo } from '../../support/daemon-repo.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { stepsResponder } from '../../support/steps-responder.ts';
import { until } from '../../support/until.ts';
import { postJson } from '../http/http-harness.ts';

type Proc = ReturnType<typeof spawnFabric>;
interface LogLine {
  time: string;
  level: string;
  msg: string;
  command: string;
  run_id?: string;
  worker_id?: string;
  code?: string;
}

/** Every line of a `--log-format json` stderr: one JSON object with time, level and msg, nothing else. */
function jsonLines(stderr: string, command: string): LogLine[] {
  const lines = stderr.split('\n').filter((line) => line !== '');
  expect(lines.length).toBeGreaterThan(0);
  return lines.map((line) => {
    const parsed = JSON.parse(line) as LogLine;
    expect(new Date(parsed.time).toISOString(), line).toBe(parsed.time);
    expect(['info', 'warn', 'error'], line).toContain(parsed.level);
    expect(typeof parsed.msg, line).toBe('string');
    expect(parsed.command, line).toBe(command);
    return parsed;
  });
}

function collect(proc: Proc): () => string {
  let text = '';
  proc.stderr?.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  return () => text;
}

const listeningUrl = (stderr: () => string) =>
  until('the server to listen', async () => /listening on (http:\/\/[^\s"]+)/.exec(stderr())?.[1]);

const endedRun = (url: string, id: string) =>
  until(`run ${id} to end`, async () => {
    const { status } = (await (await fetch(`${url}/v1/runs/${id}`)).json()) as { status: string };
    return status === 'queued' || status === 'running' ? undefined : status;
  });

describe('--log-format json', () => {
  let sandbox: Sandbox | undefined;
  let llm: FakeLlmServer | undefined;
  const procs: Proc[] = [];
  afterEach(async () => {
    for (const proc of procs) proc.kill('SIGTERM');
    await Promise.all(procs.map((proc) => proc.catch(() => {})));
    procs.length = 0;
    await llm?.stop();
    await sandbox?.cleanup();
  });

  const startLlm = () =>
    startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 131_072 }],
      respond: stepsResponder,
    });

  it('fabric serve logs one JSON object a line, from listening to stopped, around a run', async () => {
    llm = await startLlm();
    sandbox = await makeSandbox();
    const serve = spawnFabric(
      ['serve', '--port', '0', '--log-format', 'json', '--config', sandbox.configPath],
      {
        env: testEnv(sandbox, llm.url),
        cwd: sandbox.dir,
      },
    );
    procs.push(serve);
    const stderr = collect(serve);
    const url = await listeningUrl(stderr);
    const started = await postJson(`${url}/v1/runs`, { specialist: 'units', task: 'Convert 3 km' });
    const { run_id } = (await started.json()) as { run_id: string };
    expect(await endedRun(url, run_id)).toBe('succeeded');
    serve.kill('SIGTERM');
    expect((await serve).exitCode).toBe(0);
    const lines = jsonLines(stderr(), 'serve');
    expect(lines[0]?.msg).toMatch(/^listening on http:\/\//);
    expect(lines.at(-1)).toMatchObject({ level: 'info', msg: 'stopped' });
  }, 60_000);

  it('log_format: json in the config does the same, and a bad --log-format is refused with the fix', async () => {
    sandbox = await makeSandbox({ log_format: 'json' });
    const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    procs.push(serve);
    const stderr = collect(serve);
    await listeningUrl(stderr);
    serve.kill('SIGTERM');
    await serve;
    jsonLines(stderr(), 'serve');

    const bad = await spawnFabric(['serve', '--log-format', 'yaml', '--config', sandbox.configPath], {
      env: testEnv(sandbox, 'http://127.0.0.1:9'),
      cwd: sandbox.dir,
    });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain('--log-format takes text or json, not "yaml"');
  }, 60_000);

  it('fabric worker logs JSON lines carrying its worker_id, and the run_id of the run it takes', async () => {
    const db = await createTestDatabase();
    try {
      llm = await startLlm();
      sandbox = await makeSandbox({
        control: { enabled: true },
        queue: 'postgres',
        worker: { heartbeat_s: 0.3, dead_after_s: 2 },
      });
      const env = testEnv(sandbox, llm.url, { FABRIC_DSN: db.dsn });
      const serve = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
        env,
        cwd: sandbox.dir,
      });
      const worker = spawnFabric(['worker', '--log-format', 'json', '--config', sandbox.configPath], {
        env,
        cwd: sandbox.dir,
      });
      procs.push(worker, serve);
      const serveLog = collect(serve);
      const workerLog = collect(worker);
      const url = await listeningUrl(serveLog);
      const started = await postJson(`${url}/v1/runs`, { specialist: 'units', task: 'Convert 3 km' });
      const { run_id } = (await started.json()) as { run_id: string };
      expect(await endedRun(url, run_id)).toBe('succeeded');
      await until('the worker to log the run ended', async () =>
        workerLog().includes(`run ${run_id} ended`) ? true : undefined,
      );
      worker.kill('SIGTERM');
      expect((await worker).exitCode).toBe(0);
      const lines = jsonLines(workerLog(), 'worker');
      const workerId = lines[0]?.worker_id;
      expect(workerId).toMatch(/\S/);
      expect(lines.every((line) => line.worker_id === workerId)).toBe(true);
      expect(lines).toContainEqual(
        expect.objectContaining({ msg: `run ${run_id} started (units)`, run_id, worker_id: workerId }),
      );
      expect(lines.at(-1)).toMatchObject({ msg: 'stopped' });
    } finally {
      for (const proc of procs) proc.kill('SIGTERM');
      await Promise.all(procs.map((proc) => proc.catch(() => {})));
      await db.drop();
    }
  }, 90_000);

  it('fabric daemon --once logs its events as JSON lines, its failure included', async () => {
    const repo = await daemonRepo({
      'openspec/changes/a/tasks.md': '## 1. Work\n- [ ] 1.1 Add a function\n',
    });
    sandbox = await makeSandbox({
      ...DAEMON_CONFIG,
      daemon: { validate: ['cargo build'], backend_wait_s: 0 },
    });
    const out = await spawnFabric(
      ['daemon', '--once', '--log-format', 'json', '--repo', repo, '--config', sandbox.configPath],
      { env: testEnv(sandbox, 'http://127.0.0.1:9'), cwd: sandbox.dir },
    );
    expect(out.exitCode, out.stderr).toBe(4);
    const lines = jsonLines(out.stderr, 'daemon');
    expect(lines[0]).toMatchObject({ level: 'info', msg: expect.stringMatching(/^fabric daemon on /) });
    expect(lines).toContainEqual(
      expect.objectContaining({
        level: 'info',
        msg: expect.stringMatching(/^baseline of a at [0-9a-f]{10}: validation passes$/),
      }),
    );
    expect(lines.at(-1)).toMatchObject({
      level: 'error',
      code: 'backend_unavailable',
      msg: expect.stringContaining('gave up after 0s without a model'),
    });
  }, 60_000);
});

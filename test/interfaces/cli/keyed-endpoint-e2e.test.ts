import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import postgres from 'postgres';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../infrastructure/control/pg-test-db.ts';
import { type Sandbox, makeSandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { startFakeKeyed } from '../../support/fake-llm-compat.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

/**
 * Issue 27: an OpenAI-compatible endpoint with a key, through the CLI. The key is read from the
 * variable the config names, sent only to its own URL and written nowhere; a refused key fails
 * before any run; a 429 waits out its `retry-after` in the adapter; a long model list is cut to
 * the configured ids; and a run that names no model never reaches it (local first).
 */
const KEY = 'sk-proj-TESTKEY-4f9a8b7c6d5e4f3a2b1c';
const HOSTED = 'gpt-5-mini';
const LOCAL = 'qwen/qwen3-coder-30b';
const MANY = [...Array.from({ length: 300 }, (_, i) => `vendor/model-${i}`), HOSTED];

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));
}

describe('fabric on a keyed OpenAI-compatible endpoint', () => {
  const servers: FakeLlmServer[] = [];
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await server.stop();
    await sandbox?.cleanup();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  async function setUp(
    keyed: Parameters<typeof startFakeKeyed>[0],
    extra: Record<string, unknown> = {},
    localScript = CONVERSION_SCRIPT,
  ) {
    const hosted = await startFakeKeyed(keyed);
    const local = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: LOCAL, toolUse: true }],
      script: localScript,
    });
    servers.push(hosted, local);
    sandbox = await makeSandbox({
      llm: {
        retry: { max_attempts: 3, base_delay_ms: 5, max_delay_ms: 20 },
        probe_timeout_ms: 1000,
        backends: [
          {
            kind: 'openai',
            url: `${hosted.url}/v1`,
            name: 'cloud',
            api_key_env: 'FAKE_CLOUD_KEY',
            models: [HOSTED],
          },
        ],
      },
      ...extra,
    });
    return { hosted, local, sandbox };
  }

  async function fabric(
    sandbox: Sandbox,
    lmStudio: string,
    args: string[],
    env: Record<string, string> = {},
  ) {
    return runFabricInProcess([...args, '--config', sandbox.configPath], {
      env: { ...testEnv(sandbox, lmStudio), FAKE_CLOUD_KEY: KEY, ...env },
      cwd: sandbox.dir,
    });
  }

  it('fails at once, saying when to come back, on a 429 that asks for more than a run waits (a spent quota)', async () => {
    const { hosted, local, sandbox } = await setUp({
      key: KEY,
      modelIds: MANY,
      script: CONVERSION_SCRIPT,
      rateLimited: 1,
      retryAfterS: 3600,
    });
    const out = await fabric(sandbox, local.url, [
      'run',
      '-s',
      'units',
      '--json',
      '--model',
      HOSTED,
      'convert 2 m to cm',
    ]);
    const result = JSON.parse(out.stdout);
    expect(result.error?.code).toBe('backend_unavailable');
    expect(result.error?.message).toMatch(/rate-limited and asks to wait 3600 s.*run again later/s);
    expect(hosted.chatRequests()).toHaveLength(1);
    expect(out.stdout + out.stderr).not.toContain(KEY);
  });

  it('runs a named hosted model, waits out a 429 retry-after in the adapter, and writes the key nowhere', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const { hosted, local, sandbox } = await setUp(
      { key: KEY, modelIds: MANY, script: CONVERSION_SCRIPT, rateLimited: 1, retryAfterS: 1 },
      { control: { enabled: true } },
    );
    const out = await fabric(
      sandbox,
      local.url,
      ['run', '-s', 'units', '--json', '--model', HOSTED, 'convert 2 m to cm'],
      {
        FABRIC_DSN: db.dsn,
      },
    );
    expect(out.exitCode).toBe(0);
    const result = JSON.parse(out.stdout);
    expect(result.status).toBe('succeeded');
    // The 429, then the same request once its retry-after had passed, then the rest.
    const chats = hosted.chatRequests();
    expect(chats).toHaveLength(4);
    expect((chats[1]?.receivedAt ?? 0) - (chats[0]?.receivedAt ?? 0)).toBeGreaterThanOrEqual(1000);
    const runlog = await readFile(result.runlog, 'utf8');
    expect(runlog).toContain('"kind":"llm_retry"');
    expect(runlog).toMatch(/"delay_ms":1000,"reason":"429: Rate limit reached/);
    // The key went to its own URL, with every request, and nowhere else.
    expect(hosted.requests.every((r) => r.headers.authorization === `Bearer ${KEY}`)).toBe(true);
    expect(local.requests.some((r) => JSON.stringify(r).includes(KEY))).toBe(false);
    for (const file of await filesUnder(sandbox.runsDir))
      expect(await readFile(file, 'utf8')).not.toContain(KEY);
    expect(out.stdout + out.stderr).not.toContain(KEY);
    // The control plane records the backend kind of each call, and never the key.
    const sql = postgres(db.dsn, { max: 1, onnotice: () => {} });
    cleanups.push(() => sql.end());
    const calls =
      await sql`select tool, success from control.agent_run where run_id = ${result.run_id} order by seq`;
    expect(calls.map((c) => [c.tool, c.success])).toEqual([
      ['openai', false],
      ['openai', true],
      ['openai', true],
      ['openai', true],
    ]);
    const [dump] =
      await sql`select string_agg(body::text, '') as text from control.run_events where run_id = ${result.run_id}`;
    expect(String(dump?.text)).not.toContain(KEY);
  });

  it('refuses a wrong key at discovery, before any run, naming the variable and never the key', async () => {
    const { hosted, local, sandbox } = await setUp({ key: 'sk-the-right-one', modelIds: MANY });
    const out = await fabric(sandbox, local.url, [
      'run',
      '-s',
      'units',
      '--json',
      '--model',
      HOSTED,
      'convert 2 m to cm',
    ]);
    expect(out.exitCode).toBe(4);
    const result = JSON.parse(out.stdout);
    expect(result.error.message).toContain(
      `openai ${hosted.url}: refused (HTTP 401 from /v1/models: the key in FAKE_CLOUD_KEY was refused`,
    );
    expect(result.runlog ?? null).toBeNull();
    expect(hosted.chatRequests()).toHaveLength(0);
    expect(out.stdout + out.stderr).not.toContain(KEY);
    expect(await filesUnder(sandbox.runsDir)).toEqual([]);
    const models = await fabric(sandbox, local.url, ['models', '--json']);
    expect(models.stdout).not.toContain(KEY);
    const cloud = JSON.parse(models.stdout).backends.find((b: { name: string }) => b.name === 'cloud');
    expect(cloud).toMatchObject({ backend: 'openai', hosted: true, ok: false });
    const health = await fabric(sandbox, local.url, ['health', 'lm']);
    expect(health.stdout).toMatch(
      /openai http:\/\/127\.0\.0\.1:\d+\s+denied\s+\d+ ms\s+HTTP 401 from \/v1\/models/,
    );
    expect(health.stdout).not.toContain(KEY);
  });

  it('lists only the configured ids of a long model list, and shows them as hosted', async () => {
    const { local, sandbox } = await setUp({ key: KEY, modelIds: MANY });
    const out = await fabric(sandbox, local.url, ['models', '--json']);
    const cloud = JSON.parse(out.stdout).backends.find((b: { name: string }) => b.name === 'cloud');
    expect(cloud.models.map((m: { id: string }) => m.id)).toEqual([HOSTED]);
    expect(cloud.hosted).toBe(true);
    expect(out.stdout).not.toContain(KEY);
    const text = await fabric(sandbox, local.url, ['models']);
    expect(text.stdout).toMatch(/openai cloud http:\/\/127\.0\.0\.1:\d+ \(hosted: used only when named\)/);
  });

  it('never picks the hosted model on its own: the local one, and with the local server down a clear failure', async () => {
    const { hosted, local, sandbox } = await setUp({ key: KEY, modelIds: MANY, script: CONVERSION_SCRIPT });
    const run = await fabric(sandbox, local.url, ['run', '-s', 'units', '--json', 'convert 2 m to cm']);
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'succeeded', model: LOCAL });
    const down = await fabric(sandbox, 'http://127.0.0.1:9', [
      'run',
      '-s',
      'units',
      '--json',
      'convert 2 m to cm',
    ]);
    expect(down.exitCode).toBe(4);
    const error = JSON.parse(down.stdout).error;
    expect(error.code).toBe('backend_unavailable');
    expect(error.message).toContain('never chosen on its own');
    expect(hosted.chatRequests()).toHaveLength(0);
  });
});

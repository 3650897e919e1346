/**
 * docs/errors.md is a contract: every code in its tables is produced here, from outside, through
 * the built CLI (exit code, and the `code` of `--json`) and the HTTP API (status and body code),
 * and compared with what the tables say. A code added to the doc without a scenario fails, and so
 * does a scenario whose exit or status differs from the doc (issue 20). The CLI is the build
 * (`bin/fabric.mjs`): `npm run build` first.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FABRIC_ERROR_CODES } from '../../src/domain/errors.ts';
import type { RunEventInput } from '../../src/domain/run-events.ts';
import { exitCodeFor } from '../../src/interfaces/cli/exit-code.ts';
import type { Fabric } from '../../src/composition/fabric.ts';
import { HTTP_ONLY_ERROR_CODES } from '../../src/interfaces/http/api-error.ts';
import { createApp } from '../../src/interfaces/http/app.ts';
import { httpStatusFor } from '../../src/interfaces/http/status.ts';
import { closedPort, createTestDatabase } from '../infrastructure/control/pg-test-db.ts';
import { makeFabric } from '../interfaces/http/http-harness.ts';
import { succeededRun, writeRunlog } from '../infrastructure/control/fixtures.ts';
import {
  EXAMPLE_PACK,
  ROOT,
  type Sandbox,
  makeSandbox,
  spawnFabric,
  testEnv,
} from '../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../support/fake-llm-server.ts';

interface DocCode {
  readonly exit: number | undefined;
  readonly status: number;
}

/** The error codes of docs/errors.md: the main table (exit and HTTP) and the HTTP-only sentence. */
function parseDoc(text: string): {
  codes: Map<string, DocCode>;
  httpOnly: Map<string, DocCode>;
  exits: Set<number>;
} {
  const codes = new Map<string, DocCode>();
  for (const match of text.matchAll(/^\| `([a-z_]+)` \| (\d+) \| (\d{3}) \|/gm))
    codes.set(match[1]!, { exit: Number(match[2]), status: Number(match[3]) });
  const exits = new Set([...text.matchAll(/^\| (\d+) \| [a-z]/gm)].map((match) => Number(match[1])));
  const sentence = /^HTTP-only codes:([\s\S]*?)\n\n/m.exec(text)?.[1] ?? '';
  const httpOnly = new Map<string, DocCode>();
  for (const match of sentence.matchAll(/`([a-z_]+)` \((\d{3})\b/g))
    httpOnly.set(match[1]!, { exit: undefined, status: Number(match[2]) });
  return { codes, httpOnly, exits };
}

const DOC = parseDoc(await readFile(join(ROOT, 'docs/errors.md'), 'utf8'));

/** Codes no request or command line can bring about, and why; their mapping is checked directly. */
const NOT_FROM_OUTSIDE: Readonly<Record<string, string>> = {
  runlog_unwritable:
    'it takes a full filesystem under the runs directory: test/interfaces/cli/runlog-disk-full.test.ts mounts a 64 KiB tmpfs (as root) and runs into it',
  internal: 'a bug by definition: any code path that reached it from outside would be fixed to a real code',
  sandbox_violation:
    'outside a run only a queue worker unpacking a crafted workspace archive raises it (unit-tested in test/infrastructure/workspace/workspace-archive.test.ts); inside a run a refusal is a tool error, never this code',
  tool_failed:
    "only `fabric daemon` raises it, when git fails after a task ran (a commit hook that refuses): producing it takes a whole daemon run; test/application/daemon/completion-daemon.test.ts covers the daemon's handling",
};

/** What a scenario observed: the CLI's exit code (undefined if a signal killed it) or the HTTP status, and the code. */
type Seen =
  | { readonly via: 'cli'; readonly exit: number | undefined; readonly code: string | undefined }
  | { readonly via: 'http'; readonly status: number; readonly code: string | undefined };

const MODEL = 'lab/tool-7b';
const NO_TOOLS = 'tinyllama:latest';
const HANG: ScriptedTurn = { hang: true };

const SAME_CALL = {
  reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'km', to: 'm' } }] },
};
const STUCK_REPORT = {
  reply: {
    toolCalls: [{ name: 'finish_task', arguments: { summary: 'I kept converting.', answer: '1000 m' } }],
  },
};

describe('docs/errors.md, code by code', () => {
  let sandbox: Sandbox;
  let queueSandbox: Sandbox;
  let lm: FakeLlmServer;
  let ollama: FakeLlmServer;
  let tiny: FakeLlmServer;
  let fabric: Fabric;
  let downFabric: Fabric;
  let queueFabric: Fabric;
  let app: ReturnType<typeof createApp>;
  let closed: string;

  beforeAll(async () => {
    closed = `http://127.0.0.1:${await closedPort()}`;
    lm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      byTask: [
        { match: 'REFUSED', script: [{ status: 400, body: { error: 'Unrecognized request field "foo"' } }] },
        {
          match: 'OVERFLOW',
          script: [
            {
              status: 400,
              body: {
                error:
                  'The number of tokens to keep from the initial prompt is greater than the context length.',
              },
            },
          ],
        },
        { match: 'HANG', script: [HANG, HANG, HANG, HANG] },
        // The same call answered the same, on and on: told once at the 4th, stopped at the 8th.
        {
          match: 'UNPARSEABLE',
          // llama-server's parser failing on the model's output twice in a row (quirks-2 Q17).
          script: [0, 1].map(() => ({
            status: 500,
            body: {
              error: {
                code: 500,
                message: 'Failed to parse input at pos 12: </tool_call>',
                type: 'server_error',
              },
            },
          })),
        },
        { match: 'STUCK', script: [...Array.from({ length: 8 }, () => SAME_CALL), STUCK_REPORT] },
        // A call a policy ask rule names, in a run whose on_approval is fail (SPEC §19).
        { match: 'APPROVAL', script: [SAME_CALL] },
      ],
    });
    ollama = await startFakeLlmServer({ flavor: 'ollama', models: [{ id: NO_TOOLS, toolUse: false }] });
    // Loaded at a window too small for even the units pack's prompt, tools, one result and reply.
    tiny = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: MODEL, toolUse: true, contextLength: 512 }],
    });
    sandbox = await makeSandbox({
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack`, description: 'unit conversions' },
        broken: { builder: './no-such-pack.ts#buildPack' },
        elsewhere: { builder: `${EXAMPLE_PACK}#buildPack`, workspace: './no-such-dir' },
        asking: {
          builder: `${EXAMPLE_PACK}#buildPack`,
          policy: { rules: [{ tool: 'convert_units', decision: 'ask' }] },
        },
      },
    });
    // An approval already answered (SPEC §19): a second answer is refused.
    const approvals = join(sandbox.runsDir, '.approvals');
    await mkdir(approvals, { recursive: true });
    await writeFile(
      join(approvals, 'apr_answered01.json'),
      JSON.stringify({
        id: 'apr_answered01',
        run_id: 'done-run',
        specialist: 'units',
        step: 1,
        call_id: 'call_1',
        tool: 'convert_units',
        arguments: '{}',
        rule: 'policy.rules[0] (convert_units: ask)',
        requested_at: '2026-01-01T00:00:00Z',
        proposals: [],
        state: 'pending',
      }),
    );
    await writeFile(
      join(approvals, 'apr_answered01.answer.json'),
      JSON.stringify({
        state: 'denied',
        scope: 'once',
        pattern: 0,
        channel: 'cli',
        at: '2026-01-01T00:01:00Z',
      }),
    );
    // And one cut short by a full disk.
    await writeFile(join(approvals, 'apr_damaged00001.json'), '{"id":"apr_damaged00001","run_id":"do');
    await writeFile(
      join(sandbox.dir, 'bad.yaml'),
      stringify({ specialists: { units: { max_steps: 'many' } } }),
    );
    await writeFile(join(sandbox.dir, 'not-a-runlog.jsonl'), 'this is not JSON\n');
    await writeRunlog(sandbox.runsDir, 'done-run', '2026-01-01T00:00:00Z', succeededRun());
    // A run whose process stopped without a run_end (long past its budget), and one whose owner
    // is this test's own process (alive), at step 1.
    await writeRunlog(sandbox.runsDir, 'stopped-run', '2026-01-01T00:00:00Z', succeededRun().slice(0, 3));
    const [liveStart, ...liveRest] = succeededRun().slice(0, 3);
    await writeRunlog(sandbox.runsDir, 'live-run', new Date().toISOString(), [
      { ...liveStart, pid: process.pid, host: hostname() } as RunEventInput,
      ...liveRest,
    ]);
    await mkdir(join(sandbox.runsDir, 'torn-run'), { recursive: true });
    await writeFile(join(sandbox.runsDir, 'torn-run', 'runlog.jsonl'), 'garbage\nmore garbage\n');
    await mkdir(join(sandbox.dir, 'busy'));
    await writeFile(join(sandbox.dir, 'a-file.txt'), 'not a directory');
    fabric = await makeFabric(sandbox, lm.url);
    downFabric = await makeFabric(sandbox, closed);
    queueSandbox = await makeSandbox({ queue: 'postgres', control: { enabled: true } });
    queueFabric = await makeFabric(queueSandbox, lm.url, {
      FABRIC_DSN: `postgres://postgres@127.0.0.1:${await closedPort()}/nothing`,
    });
    app = createApp({ fabric, requireToken: false });
  });
  afterAll(async () => {
    await Promise.all([fabric?.close(), downFabric?.close(), queueFabric?.close()]);
    await Promise.all([lm?.stop(), ollama?.stop(), tiny?.stop()]);
    await Promise.all([sandbox?.cleanup(), queueSandbox?.cleanup()]);
  });

  /** The built CLI; `--json` output gives the code (an error object, or the failed RunResult's error). */
  async function cli(args: string[], env: Record<string, string> = {}): Promise<Seen> {
    const result = await spawnFabric(args, {
      env: { ...testEnv(sandbox, lm.url), ...env },
      cwd: sandbox.dir,
      build: true,
    });
    return { via: 'cli', exit: result.exitCode, code: codeOf(result.stdout) };
  }

  const run = (specialist: string, task: string, ...more: string[]) =>
    cli(['run', '-s', specialist, '--json', '--config', sandbox.configPath, ...more, task]);

  async function http(on: ReturnType<typeof createApp>, path: string, init: RequestInit = {}): Promise<Seen> {
    const response = await on.request(path, init);
    const body = (await response.json()) as { error?: { code?: string } };
    return { via: 'http', status: response.status, code: body.error?.code };
  }

  const post = (path: string, body: unknown, on = app) =>
    http(on, path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });

  /** A run that is waiting on a model that never answers; its id. */
  async function hangingRun(workspace?: string): Promise<string> {
    const response = await app.request('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ specialist: 'units', task: 'HANG', ...(workspace ? { workspace } : {}) }),
    });
    expect(response.status).toBe(202);
    return ((await response.json()) as { run_id: string }).run_id;
  }

  /** How each code is brought about: through the CLI, the HTTP API, or both. */
  const SCENARIOS: Readonly<Record<string, () => Promise<Seen[]>>> = {
    usage: async () => [
      await run('units', 't', '--max-steps', '0'),
      await post('/v1/runs', { specialist: 'units', task: 't', workspace: join(sandbox.dir, 'a-file.txt') }),
    ],
    config_invalid: async () => [
      await cli(['run', '-s', 'units', '--json', '--config', join(sandbox.dir, 'bad.yaml'), 't']),
      await post('/v1/runs', { specialist: 'elsewhere', task: 't' }),
    ],
    config_not_found: async () => [
      await cli(['run', '-s', 'units', '--json', '--config', join(sandbox.dir, 'nowhere.yaml'), 't']),
    ],
    specialist_unknown: async () => [
      await run('nobody', 't'),
      await post('/v1/runs', { specialist: 'nobody', task: 't' }),
    ],
    pack_load_failed: async () => [
      await run('broken', 't'),
      await post('/v1/runs', { specialist: 'broken', task: 't' }),
    ],
    run_not_found: async () => [
      await cli(['runs', 'show', 'no-such-run', '--json', '--config', sandbox.configPath]),
      await http(app, '/v1/runs/no-such-run'),
    ],
    run_not_resumable: async () => [
      await cli(['resume', 'done-run', '--json', '--config', sandbox.configPath]),
      await post('/v1/runs/done-run/resume', {}),
    ],
    // Steering (SPEC §19): a message to an ended run, a stopped one, and one written for a step
    // the live run has left.
    run_finished: async () => [
      await cli(['steer', 'done-run', 'look at damage.rs', '--json', '--config', sandbox.configPath]),
      await post('/v1/runs/done-run/messages', { text: 'look at damage.rs' }),
    ],
    run_not_live: async () => [
      await cli(['steer', 'stopped-run', 'look at damage.rs', '--json', '--config', sandbox.configPath]),
      await post('/v1/runs/stopped-run/messages', { text: 'look at damage.rs' }),
    ],
    steer_stale_step: async () => [
      await cli([
        'steer',
        'live-run',
        'look at damage.rs',
        '--expected-step',
        '7',
        '--json',
        '--config',
        sandbox.configPath,
      ]),
      await post('/v1/runs/live-run/messages', { text: 'look at damage.rs', expected_step: 7 }),
    ],
    // Approvals (SPEC §19): one that does not exist, one already answered, and a run that ends on
    // a call needing one because its on_approval is fail.
    approval_not_found: async () => [
      await cli(['approvals', 'answer', 'apr_nothing', 'approve', '--json', '--config', sandbox.configPath]),
      await post('/v1/approvals/apr_nothing', { decision: 'approve' }),
    ],
    approval_answered: async () => [
      await cli([
        'approvals',
        'answer',
        'apr_answered01',
        'approve',
        '--json',
        '--config',
        sandbox.configPath,
      ]),
      await post('/v1/approvals/apr_answered01', { decision: 'approve' }),
    ],
    approval_unreadable: async () => [
      await cli(['approvals', 'answer', 'apr_damaged', 'approve', '--json', '--config', sandbox.configPath]),
      await post('/v1/approvals/apr_damaged00001', { decision: 'approve' }),
    ],
    approval_required: async () => [await run('asking', 'APPROVAL', '--on-approval', 'fail')],
    // A finished run sent to a receiver that is not there.
    telemetry_export_failed: async () => [
      await cli([
        'otel',
        'export',
        'done-run',
        '--endpoint',
        `${closed}/v1/traces`,
        '--json',
        '--config',
        sandbox.configPath,
      ]),
    ],
    runlog_corrupt: async () => [
      await cli([
        'replay',
        join(sandbox.dir, 'not-a-runlog.jsonl'),
        '--json',
        '--config',
        sandbox.configPath,
      ]),
      await post('/v1/runs/torn-run/replay', {}),
    ],
    backend_unavailable: async () => [
      await cli(['run', '-s', 'units', '--json', '--config', sandbox.configPath, 't'], {
        LM_STUDIO_URL: closed,
      }),
      await post(
        '/v1/runs',
        { specialist: 'units', task: 't' },
        createApp({ fabric: downFabric, requireToken: false }),
      ),
    ],
    model_not_found: async () => [
      await run('units', 't', '--model', 'lab/ghost-1b'),
      await post('/v1/runs', { specialist: 'units', task: 't', model: 'lab/ghost-1b' }),
    ],
    // After the run has started, so over HTTP it is the run's error, not the response's.
    model_lacks_tools: async () => [
      await cli(['run', '-s', 'units', '--json', '--config', sandbox.configPath, '--model', NO_TOOLS, 't'], {
        LM_STUDIO_URL: closed,
        OLLAMA_HOST: ollama.url,
      }),
    ],
    backend_error: async () => [await run('units', 'REFUSED')],
    context_overflow: async () => [await run('units', 'OVERFLOW')],
    run_stuck: async () => [await run('units', 'STUCK')],
    model_output_unparseable: async () => [await run('units', 'UNPARSEABLE')],
    context_too_small: async () => {
      const seen = await cli(['run', '-s', 'units', '--json', '--config', sandbox.configPath, 't'], {
        LM_STUDIO_URL: tiny.url,
      });
      // Said before any request.
      expect(tiny.chatRequests()).toHaveLength(0);
      return [seen];
    },
    run_cancelled: async () => {
      const child = spawnFabric(
        ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'HANG ctrl-c'],
        {
          env: testEnv(sandbox, lm.url),
          cwd: sandbox.dir,
          build: true,
        },
      );
      const before = lm.chatRequests().length;
      for (
        let i = 0;
        i < 400 && !lm.chatRequests().some((r) => JSON.stringify(r.body).includes('HANG ctrl-c'));
        i++
      )
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(lm.chatRequests().length).toBeGreaterThan(before);
      child.kill('SIGINT');
      const result = await child;
      return [{ via: 'cli', exit: result.exitCode, code: codeOf(result.stdout) }];
    },
    queue_unavailable: async () => [
      await post(
        '/v1/runs',
        { specialist: 'units', task: 't' },
        createApp({ fabric: queueFabric, requireToken: false }),
      ),
    ],
    workspace_too_large: async () => {
      const db = await createTestDatabase();
      try {
        await mkdir(join(sandbox.dir, 'big'), { recursive: true });
        await writeFile(join(sandbox.dir, 'big', 'data.bin'), Buffer.alloc(64 * 1024));
        const battery = join(sandbox.dir, 'big.yaml');
        await writeFile(
          battery,
          stringify({
            name: 'big',
            specialist: 'units',
            workspace: './big',
            models: [MODEL],
            tasks: [{ id: 'a', task: 't' }],
          }),
        );
        const config = join(sandbox.dir, 'tiny-archive.yaml');
        await writeFile(
          config,
          stringify({
            specialists: { units: { builder: `${EXAMPLE_PACK}#buildPack` } },
            control: { enabled: true },
            queue: 'postgres',
            worker: { archive_max_mib: 0.01 },
          }),
        );
        return [await cli(['battery', battery, '--json', '--config', config], { FABRIC_DSN: db.dsn })];
      } finally {
        await db.drop();
      }
    },
    workspace_busy: async () => {
      const first = await hangingRun(join(sandbox.dir, 'busy'));
      const second = await post('/v1/runs', {
        specialist: 'units',
        task: 'HANG',
        workspace: join(sandbox.dir, 'busy'),
      });
      await app.request(`/v1/runs/${first}/cancel`, { method: 'POST' });
      return [second];
    },
    // HTTP-only codes.
    invalid_request: async () => [await post('/v1/runs', { specialist: 'units', task: 't', maxSteps: 3 })],
    unauthorized: async () => [
      await http(createApp({ fabric, token: 'secret', requireToken: false }), '/v1/runs'),
    ],
    forbidden: async () => [await http(app, '/v1/runs', { headers: { origin: 'http://evil.example' } })],
    not_found: async () => [await http(app, '/v1/nope')],
    run_not_active: async () => {
      const id = await hangingRun();
      await app.request(`/v1/runs/${id}/cancel`, { method: 'POST' });
      return [await http(app, `/v1/runs/${id}/cancel`, { method: 'POST' })];
    },
    payload_too_large: async () => [
      await post('/v1/runs', { specialist: 'units', task: 'x'.repeat(1024 * 1024 + 1) }),
    ],
  };

  it('documents every code the fabric has, and no code it does not have', () => {
    expect([...DOC.codes.keys()].sort()).toEqual([...FABRIC_ERROR_CODES].sort());
    expect([...DOC.httpOnly.keys()].sort()).toEqual([...HTTP_ONLY_ERROR_CODES].sort());
  });

  it('gives each code the exit code and HTTP status of the mapping modules, and only exit codes it explains', () => {
    for (const code of FABRIC_ERROR_CODES) {
      const doc = DOC.codes.get(code);
      expect({ code, exit: exitCodeFor(code), status: httpStatusFor(code) }).toEqual({
        code,
        exit: doc?.exit,
        status: doc?.status,
      });
      expect(DOC.exits).toContain(exitCodeFor(code));
    }
    for (const code of HTTP_ONLY_ERROR_CODES)
      expect([code, httpStatusFor(code)]).toEqual([code, DOC.httpOnly.get(code)?.status]);
  });

  it('has a scenario, or a reason why none can exist, for every documented code', () => {
    for (const code of [...DOC.codes.keys(), ...DOC.httpOnly.keys()]) {
      const how = [code in SCENARIOS ? 'scenario' : null, code in NOT_FROM_OUTSIDE ? 'reason' : null].filter(
        Boolean,
      );
      expect([code, how]).toEqual([code, how.length === 1 ? how : ['scenario or reason, not both']]);
    }
  });

  describe.concurrent('each scenario produces its code with the exit and status the doc gives', () => {
    const all = [...DOC.codes, ...DOC.httpOnly].filter(([code]) => !(code in NOT_FROM_OUTSIDE));
    it.each(all)('%s', async (code, doc) => {
      const scenario = SCENARIOS[code];
      if (scenario === undefined)
        throw new Error(`docs/errors.md lists ${code}, and no scenario produces it`);
      for (const seen of await scenario()) {
        if (seen.via === 'cli')
          expect({ code: seen.code, exit: seen.exit }).toEqual({ code, exit: doc.exit });
        else expect({ code: seen.code, status: seen.status }).toEqual({ code, status: doc.status });
      }
    });
  });
});

/** The code of a `--json` output: `{"error":{"code"}}`, or a RunResult whose `error` has one. */
function codeOf(stdout: string): string | undefined {
  const last = stdout.trim().split('\n').at(-1);
  if (!last) return undefined;
  try {
    return (JSON.parse(last) as { error?: { code?: string } | null }).error?.code;
  } catch {
    return undefined;
  }
}

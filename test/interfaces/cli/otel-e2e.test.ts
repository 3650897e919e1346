import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import {
  ROOT,
  type Sandbox,
  SOURCE_CLI,
  makeSandbox,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '../../support/otlp-receiver.ts';
import type { ScriptedTurn } from '../../support/fake-llm-types.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const TASK = 'Convert 3 km to miles';
/** The conversion, each reply held back a little: the first token comes measurably late. */
const SLOW_SCRIPT: ScriptedTurn[] = CONVERSION_SCRIPT.map((turn) =>
  'reply' in turn ? { ...turn, delayMs: 20 } : turn,
);

describe('OpenTelemetry traces of a fabric run, received over OTLP/HTTP protobuf', () => {
  let llm: FakeLlmServer;
  let receiver: OtlpReceiver;
  let sandbox: Sandbox;

  beforeEach(async () => {
    sandbox = await makeSandbox();
    receiver = await startOtlpReceiver();
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: SLOW_SCRIPT,
    });
  });
  afterEach(async () => {
    await llm.stop();
    await receiver.stop();
    await sandbox.cleanup();
  });

  async function run(env: Record<string, string>): Promise<RunResult> {
    const result = await spawnFabric(
      ['run', '--specialist', 'units', '--json', '--config', sandbox.configPath, TASK],
      {
        env: testEnv(sandbox, llm.url, env),
        cwd: sandbox.dir,
      },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    return JSON.parse(result.stdout) as RunResult;
  }

  it('sends the run as invoke_agent with chat and execute_tool children, with the usage the model reported and no content', async () => {
    const result = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    expect(receiver.requests.map((request) => request.path)).toEqual(['/v1/traces']);
    expect(receiver.requests[0]?.contentType).toBe('application/x-protobuf');
    const spans = receiver.spans;
    const roots = spans.filter((span) => span.parentSpanId === '');
    expect(roots.map((span) => span.name)).toEqual(['invoke_agent units']);
    const root = roots[0] as ReceivedSpan;
    expect(root.resource['service.name']).toBe('agent-fabric');
    expect(root.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'units',
      'gen_ai.conversation.id': result.run_id,
      'gen_ai.provider.name': 'lm_studio',
      'gen_ai.usage.input_tokens': result.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': result.usage.completion_tokens,
      'fabric.run.status': 'succeeded',
    });
    expect(root.status.code).toBe(1);
    for (const span of spans) {
      expect(span.traceId).toBe(root.traceId);
      if (span !== root) expect(span.parentSpanId).toBe(root.spanId);
    }

    // One chat span per model request, with what the fake server reported for it.
    const chats = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats.map((span) => span.name)).toEqual([`chat ${MODEL}`, `chat ${MODEL}`, `chat ${MODEL}`]);
    expect(chats.map((span) => span.kind)).toEqual([3, 3, 3]); // SPAN_KIND_CLIENT
    const events = parseRunlog(await readFile(result.runlog, 'utf8'), result.runlog).events;
    const responses = events.filter(
      (event): event is Extract<RunEvent, { kind: 'llm_response' }> => event.kind === 'llm_response',
    );
    expect(chats.map((span) => span.attributes['gen_ai.usage.input_tokens'])).toEqual([100, 150, 200]);
    expect(chats.map((span) => span.attributes['gen_ai.usage.output_tokens'])).toEqual([10, 12, 14]);
    expect(chats.map((span) => span.attributes['gen_ai.usage.input_tokens'])).toEqual(
      responses.map((response) => response.usage.prompt_tokens),
    );
    const port = Number(new URL(llm.url).port);
    for (const chat of chats)
      expect(chat.attributes).toMatchObject({
        'gen_ai.provider.name': 'lm_studio',
        'gen_ai.request.model': MODEL,
        'gen_ai.conversation.id': result.run_id,
        'server.address': '127.0.0.1',
        'server.port': port,
        'gen_ai.response.finish_reasons': ['tool_calls'],
      });
    // Time to first token: recorded per model turn in the runlog, carried by its chat span.
    for (const response of responses) expect(response.ttft_ms).toBeGreaterThan(0);
    expect(chats.map((span) => span.attributes['gen_ai.response.time_to_first_chunk'])).toEqual(
      responses.map((response) => (response.ttft_ms ?? 0) / 1000),
    );
    expect(chats.map((span) => span.attributes['fabric.ttft_ms'])).toEqual(
      responses.map((response) => response.ttft_ms),
    );

    const tools = spans.filter((span) => span.attributes['gen_ai.operation.name'] === 'execute_tool');
    expect(tools.map((span) => [span.name, span.attributes['fabric.tool.outcome']])).toEqual([
      ['execute_tool convert_units', 'ok'],
      ['execute_tool finish_task', 'finish_rejected'],
      ['execute_tool finish_task', 'finished'],
    ]);
    expect(tools[0]?.attributes['gen_ai.tool.call.id']).toMatch(/\S/);
    expect(root.events.map((event) => event.name)).toEqual(['fabric.finish_rejected']);

    // Content only when asked for.
    const contentKeys = [
      'gen_ai.input.messages',
      'gen_ai.output.messages',
      'gen_ai.tool.call.arguments',
      'gen_ai.tool.call.result',
    ];
    for (const span of spans) for (const key of contentKeys) expect(span.attributes).not.toHaveProperty(key);
  });

  it('exports a finished run with `fabric otel export` twice under the same ids as the live export, content on request', async () => {
    const result = await run({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url });
    const live = idsOf(receiver.spans);
    receiver.spans.length = 0;
    const env = testEnv(sandbox, llm.url);
    const endpoint = `${receiver.url}/v1/traces`;
    for (const round of [1, 2]) {
      const exported = await spawnFabric(
        ['otel', 'export', result.run_id, '--endpoint', endpoint, '--json', '--config', sandbox.configPath],
        {
          env,
          cwd: sandbox.dir,
        },
      );
      expect(exported.exitCode, exported.stderr).toBe(0);
      expect(JSON.parse(exported.stdout)).toEqual([
        { run_id: result.run_id, trace_id: live[0]?.[0], spans: live.length },
      ]);
      expect(idsOf(receiver.spans), `round ${round}`).toEqual(live);
      receiver.spans.length = 0;
    }

    const withContent = await spawnFabric(['otel', 'export', result.runlog, '--config', sandbox.configPath], {
      env: {
        ...env,
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
        OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
      },
      cwd: sandbox.dir,
    });
    expect(withContent.exitCode, withContent.stderr).toBe(0);
    const convert = receiver.spans.find((span) => span.name === 'execute_tool convert_units');
    expect(JSON.parse(String(convert?.attributes['gen_ai.tool.call.arguments']))).toEqual({
      value: 3,
      from: 'km',
      to: 'mi',
    });
    expect(convert?.attributes['gen_ai.tool.call.result']).toContain('1.864');
    const firstChat = receiver.spans.find((span) => span.name === `chat ${MODEL}`);
    expect(String(firstChat?.attributes['gen_ai.input.messages'])).toContain(TASK);
    receiver.spans.length = 0;

    // A runlog written before time to first token was recorded exports as before, without it.
    const oldDir = join(sandbox.dir, 'old-run');
    await mkdir(oldDir);
    const oldRunlog = join(oldDir, 'runlog.jsonl');
    const lines = (await readFile(result.runlog, 'utf8')).split('\n').filter((line) => line !== '');
    const stripped = lines.map((line) => {
      const { ttft_ms: _dropped, ...rest } = JSON.parse(line) as Record<string, unknown>;
      return JSON.stringify(rest);
    });
    expect(stripped).not.toEqual(lines);
    await writeFile(oldRunlog, `${stripped.join('\n')}\n`);
    const old = await spawnFabric(
      ['otel', 'export', oldRunlog, '--endpoint', endpoint, '--config', sandbox.configPath],
      {
        env,
        cwd: sandbox.dir,
      },
    );
    expect(old.exitCode, old.stderr).toBe(0);
    expect(idsOf(receiver.spans)).toEqual(live);
    const oldChats = receiver.spans.filter((span) => span.name === `chat ${MODEL}`);
    expect(oldChats).toHaveLength(3);
    for (const chat of oldChats) {
      expect(chat.attributes).not.toHaveProperty('gen_ai.response.time_to_first_chunk');
      expect(chat.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    }
  });

  it('says which receiver did not take the spans, and how to name one when none is', async () => {
    const result = await run({});
    await receiver.stop();
    const refused = await spawnFabric(
      [
        'otel',
        'export',
        result.run_id,
        '--endpoint',
        `${receiver.url}/v1/traces`,
        '--config',
        sandbox.configPath,
      ],
      {
        env: testEnv(sandbox, llm.url),
        cwd: sandbox.dir,
      },
    );
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('did not take the spans');
    expect(refused.stderr).toContain(`${receiver.url}/v1/traces`);
    receiver = await startOtlpReceiver();
    const none = await spawnFabric(['otel', 'export', result.run_id, '--config', sandbox.configPath], {
      env: testEnv(sandbox, llm.url),
      cwd: sandbox.dir,
    });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
  });

  it('with telemetry off sends nothing and loads no OpenTelemetry module; on, it loads them', async () => {
    const modulesOff = join(sandbox.dir, 'modules-off.txt');
    const modulesOn = join(sandbox.dir, 'modules-on.txt');
    for (const [file, env] of [
      [modulesOff, {}],
      [modulesOn, { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url }],
    ] as const) {
      const child = await execa(
        process.execPath,
        [
          '--import',
          join(ROOT, 'test/support/record-modules.mjs'),
          SOURCE_CLI,
          'run',
          '--specialist',
          'units',
          '--json',
          '--config',
          sandbox.configPath,
          TASK,
        ],
        {
          reject: false,
          cwd: sandbox.dir,
          extendEnv: false,
          env: {
            PATH: process.env.PATH ?? '/usr/bin:/bin',
            HOME: process.env.HOME ?? '/tmp',
            ...testEnv(sandbox, llm.url, env),
            FABRIC_TEST_MODULES_FILE: file,
          },
        },
      );
      expect(child.exitCode, child.stderr).toBe(0);
      if (file === modulesOff) expect(receiver.requests).toEqual([]);
      llm.push(...CONVERSION_SCRIPT);
    }
    const off = await readFile(modulesOff, 'utf8');
    const on = await readFile(modulesOn, 'utf8');
    expect(off).toContain('/src/interfaces/cli/main.ts');
    expect(off).not.toContain('@opentelemetry');
    expect(on).toContain('@opentelemetry/exporter-trace-otlp-proto');
    expect(receiver.requests.map((request) => request.path)).toEqual(['/v1/traces']);
  });
});

function idsOf(spans: readonly ReceivedSpan[]): [string, string, string, string][] {
  return spans.map((span) => [span.traceId, span.spanId, span.parentSpanId, span.name]);
}

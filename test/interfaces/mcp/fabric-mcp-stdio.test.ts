import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { SOURCE_CLI, type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric mcp, driven by the official SDK client over stdio', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  let client: Client;
  let transport: StdioClientTransport;
  let stderr: string;
  let clientErrors: Error[];

  beforeEach(async () => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    transport = new StdioClientTransport({
      command: process.execPath,
      args: [SOURCE_CLI, 'mcp', '--config', sandbox.configPath],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...testEnv(sandbox, server.url) },
      cwd: sandbox.dir,
      stderr: 'pipe',
    });
    stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    clientErrors = [];
    client = new Client({ name: 'test-client', version: '1.0.0' });
    // Anything but MCP on the server's stdout would surface here as a parse error.
    client.onerror = (error) => clientErrors.push(error);
    await client.connect(transport);
  });
  afterEach(async () => {
    await client.close();
    await server.stop();
    await sandbox.cleanup();
  });

  it('lists its tools and specialists', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual([
      'run_task',
      'resume_run',
      'answer_approval',
      'list_approvals',
      'list_specialists',
      'get_run',
      'list_models',
    ]);
    const runTask = tools.find((tool) => tool.name === 'run_task');
    expect(runTask?.inputSchema).toMatchObject({ type: 'object', required: ['specialist', 'task'] });

    const specialists = await client.callTool({ name: 'list_specialists', arguments: {} });
    expect(specialists.structuredContent).toMatchObject({
      specialists: [{ name: 'units', description: 'unit conversions' }],
    });
    const models = await client.callTool({ name: 'list_models', arguments: {} });
    const backends = (
      models.structuredContent as { backends: { backend: string; models: { id: string }[] }[] }
    ).backends;
    expect(backends.find((probe) => probe.backend === 'lm_studio')?.models.map((m) => m.id)).toContain(MODEL);
    expect(clientErrors).toEqual([]);
  });

  it('runs a task, reporting progress per event, and returns the RunResult', async () => {
    const progress: Progress[] = [];
    const result = await client.callTool(
      { name: 'run_task', arguments: { specialist: 'units', task: 'Convert 3 km to miles' } },
      undefined,
      { onprogress: (update) => progress.push(update), timeout: 30_000 },
    );
    expect(result.isError).toBeFalsy();
    const run = result.structuredContent as unknown as RunResult;
    expect(run).toMatchObject({
      status: 'succeeded',
      payload: { summary: 'Converted 3 km.', answer: '1.864114 mi' },
      model: MODEL,
      steps: 3,
    });
    const text = (result.content as { type: string; text: string }[])[0]?.text ?? '';
    expect(JSON.parse(text)).toEqual(run);

    const messages = progress.map((update) => update.message);
    expect(messages[0]).toMatch(/^model: qwen\/qwen3-coder-30b/);
    expect(messages).toContain(`run ${run.run_id} started: units on ${MODEL}`);
    expect(messages).toContainEqual(expect.stringMatching(/^step 1: convert_units /));
    expect(messages).toContainEqual(expect.stringMatching(/^step 2: finish_task rejected/));
    expect(messages.at(-1)).toBe(`run ${run.run_id} ended: succeeded after 3 steps`);
    expect(progress.map((update) => update.progress)).toEqual(progress.map((_, index) => index + 1));

    const again = await client.callTool({ name: 'get_run', arguments: { run_id: run.run_id } });
    expect(again.structuredContent).toMatchObject({
      run_id: run.run_id,
      status: 'succeeded',
      specialist: 'units',
      task: 'Convert 3 km to miles',
      payload: run.payload,
      steps: 3,
      runlog: run.runlog,
    });
    expect(clientErrors).toEqual([]);
    expect(stderr).toMatch(/fabric mcp: run .* succeeded/);
  });

  it('exits when the client closes stdin', async () => {
    const pid = transport.pid;
    expect(pid).toBeTypeOf('number');
    const started = Date.now();
    await client.close();
    const alive = () => {
      try {
        process.kill(pid!, 0);
        return true;
      } catch {
        return false;
      }
    };
    expect(alive()).toBe(false);
    // StdioClientTransport sends SIGTERM only after 2 s: under that, the server left by itself.
    expect(Date.now() - started).toBeLessThan(1900);
  });

  it('resumes a run with resume_run, and refuses with the code and the fix as a tool error', async () => {
    const first = await client.callTool({
      name: 'run_task',
      arguments: { specialist: 'units', task: 'Convert 3 km to miles', max_steps: 1 },
    });
    const run = first.structuredContent as unknown as RunResult;
    expect(run.status).toBe('max_steps');
    const without = await client.callTool({ name: 'resume_run', arguments: { run_id: run.run_id } });
    expect(without.isError).toBe(true);
    const refused = (without.content as { text: string }[])[0]?.text ?? '';
    expect(refused.startsWith(`run_not_resumable: Run ${run.run_id} cannot be resumed`)).toBe(true);
    expect(refused).toContain('Give it more with --max-steps N');
    const progress: Progress[] = [];
    const resumed = await client.callTool(
      { name: 'resume_run', arguments: { run_id: run.run_id, max_steps: 3 } },
      undefined,
      { onprogress: (update) => progress.push(update) },
    );
    expect(resumed.isError, JSON.stringify(resumed.content)).not.toBe(true);
    expect(resumed.structuredContent).toMatchObject({ run_id: run.run_id, status: 'succeeded' });
    expect(progress.length).toBeGreaterThan(0);
    const again = await client.callTool({ name: 'resume_run', arguments: { run_id: run.run_id } });
    expect(again.isError).toBe(true);
    expect((again.content as { text: string }[])[0]?.text).toContain('run_not_resumable: Run');
    expect((again.content as { text: string }[])[0]?.text).toContain(
      'it succeeded: there is nothing to resume',
    );
  });

  it('answers bad requests with tool errors', async () => {
    const unknown = await client.callTool({ name: 'run_task', arguments: { specialist: 'nope', task: 'x' } });
    expect(unknown.isError).toBe(true);
    expect(JSON.stringify(unknown.content)).toMatch(/No specialist \\"nope\\"/);
    const invalid = await client.callTool({ name: 'run_task', arguments: { specialist: 'units' } });
    expect(invalid.isError).toBe(true);
    expect(JSON.stringify(invalid.content)).toMatch(/"task\\" is required/);
    const missing = await client.callTool({ name: 'get_run', arguments: { run_id: 'no-such-run' } });
    expect(missing.isError).toBe(true);
  });

  it('cancels the run when the client cancels the request', async () => {
    server.push({ hang: true });
    // Use up the conversion script first so the next chat request hangs.
    await client.callTool({ name: 'run_task', arguments: { specialist: 'units', task: 'Convert 3 km' } });
    const controller = new AbortController();
    let runId: string | undefined;
    const call = client.callTool(
      { name: 'run_task', arguments: { specialist: 'units', task: 'Hang' } },
      undefined,
      {
        signal: controller.signal,
        onprogress: (update) => {
          runId ??= /^run (\S+) started/.exec(update.message ?? '')?.[1];
        },
      },
    );
    const before = server.chatRequests().length;
    for (let i = 0; i < 1200 && server.chatRequests().length === before; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    controller.abort(new Error('user cancelled'));
    await expect(call).rejects.toThrow(/user cancelled/);
    expect(runId).toBeDefined();
    let status: unknown;
    for (let i = 0; i < 200 && status !== 'cancelled'; i += 1) {
      const summary = await client.callTool({ name: 'get_run', arguments: { run_id: runId } });
      status = (summary.structuredContent as { status?: string } | undefined)?.status;
      if (status !== 'cancelled') await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(status).toBe('cancelled');
  });
});

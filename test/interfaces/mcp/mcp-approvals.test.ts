import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import {
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
} from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { SOURCE_CLI, type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate } from '../../support/rust-run.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const CALL = { timeout: 120_000 };

const CONFIG = {
  policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }] },
  specialists: {
    rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
  },
};

function shell(command: string) {
  return { reply: { toolCalls: [{ name: 'shell', arguments: { command } }] } };
}

const FINISH = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] },
};

function lastMessage(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return String(messages.at(-1)?.content);
}

async function decided(runlog: string): Promise<RunEvent | undefined> {
  const events = parseRunlog(await readFile(runlog, 'utf8'), runlog).events;
  return events.find((event) => event.kind === 'approval_decided');
}

interface ParkedApproval {
  id: string;
  argv: string[];
  rule: string;
  proposals: { index: number; label: string }[];
}

describe('approvals over MCP (SPEC §19), driven by the SDK client over stdio', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let client: Client | undefined;
  afterEach(async () => {
    await client?.close();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function connect(
    script: unknown[],
    elicit?: (request: ElicitRequest) => ElicitResult,
  ): Promise<{ workspace: string }> {
    sandbox = await makeSandbox(CONFIG);
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: script as never,
    });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [SOURCE_CLI, 'mcp', '--config', sandbox.configPath],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...testEnv(sandbox, llm.url) },
      cwd: sandbox.dir,
      stderr: 'pipe',
    });
    client = new Client(
      { name: 'test-client', version: '1.0.0' },
      elicit === undefined ? {} : { capabilities: { elicitation: {} } },
    );
    if (elicit !== undefined) client.setRequestHandler(ElicitRequestSchema, (request) => elicit(request));
    await client.connect(transport);
    return { workspace: await exampleCrate() };
  }

  const runTask = (workspace: string) =>
    client!.callTool(
      { name: 'run_task', arguments: { specialist: 'rust', task: 'Show the tree', workspace } },
      undefined,
      CALL,
    );

  it('asks a client with elicitation, and runs the approved command for real', async () => {
    const asked: ElicitRequest[] = [];
    const { workspace } = await connect([shell('cargo tree -e features'), FINISH], (request) => {
      asked.push(request);
      return { action: 'accept', content: { decision: 'approve', message: 'only the tree, please' } };
    });
    const result = await runTask(workspace);
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const run = result.structuredContent as unknown as RunResult;
    expect(run.status).toBe('succeeded');
    expect(asked).toHaveLength(1);
    const params = asked[0]!.params as { message: string; requestedSchema: { properties: object } };
    expect(params.message).toContain('`cargo tree -e features`');
    expect(params.message).toContain('policy.rules[0] (shell "cargo tree": ask)');
    expect(params.message).toContain('1 = cargo tree <any arguments>');
    expect(Object.keys(params.requestedSchema.properties)).toEqual([
      'decision',
      'scope',
      'pattern',
      'message',
    ]);
    const read = lastMessage(llm!.chatRequests()[1]!.body);
    // cargo's real output in the sandbox, and the person's message.
    expect(read).toContain('compositor-core v0.1.0');
    expect(read).toContain('their message: only the tree, please');
    expect(await decided(run.runlog)).toMatchObject({ state: 'approved', channel: 'mcp', scope: 'once' });
  });

  it('a client that declines denies the call; the model is told and cargo never runs', async () => {
    const { workspace } = await connect([shell('cargo tree'), FINISH], () => ({ action: 'decline' }));
    const result = await runTask(workspace);
    const run = result.structuredContent as unknown as RunResult;
    expect(run.status).toBe('succeeded');
    const read = lastMessage(llm!.chatRequests()[1]!.body);
    expect(read).toContain('Not run: a person denied `cargo tree`');
    expect(read).not.toContain('compositor-core v0.1.0');
    expect(await decided(run.runlog)).toMatchObject({ state: 'denied', channel: 'mcp' });
  });

  it('without elicitation: returns at once, parked, and answer_approval goes on with the run', async () => {
    const { workspace } = await connect([shell('cargo tree -e features'), FINISH]);
    const parked = await runTask(workspace);
    expect(parked.isError, JSON.stringify(parked.content)).toBeFalsy();
    const run = parked.structuredContent as unknown as RunResult & { approval: ParkedApproval };
    expect(run.status).toBe('awaiting_approval');
    expect(run.approval).toMatchObject({
      argv: ['cargo', 'tree', '-e', 'features'],
      rule: 'policy.rules[0] (shell "cargo tree": ask)',
      proposals: [{ index: 0 }, { index: 1, label: 'cargo tree <any arguments>' }],
    });
    const id = run.approval.id;
    expect((parked.content as { text: string }[])[0]?.text).toContain(
      `answer_approval {"approval_id": "${id}", "decision": "approve"}`,
    );
    // Parked: one model request, nothing more is asked meanwhile.
    expect(llm!.chatRequests()).toHaveLength(1);
    const pending = await client!.callTool({ name: 'list_approvals', arguments: {} });
    expect(pending.structuredContent).toMatchObject({
      approvals: [{ id, run_id: run.run_id, state: 'pending' }],
    });

    const answered = await client!.callTool(
      { name: 'answer_approval', arguments: { approval_id: id, decision: 'approve', message: 'go ahead' } },
      undefined,
      CALL,
    );
    expect(answered.isError, JSON.stringify(answered.content)).toBeFalsy();
    expect(answered.structuredContent).toMatchObject({ run_id: run.run_id, status: 'succeeded' });
    const read = lastMessage(llm!.chatRequests()[1]!.body);
    expect(read).toContain('compositor-core v0.1.0');
    expect(read).toContain('their message: go ahead');
    expect(await decided(run.runlog)).toMatchObject({ approval_id: id, state: 'approved', channel: 'mcp' });

    const again = await client!.callTool({
      name: 'answer_approval',
      arguments: { approval_id: id, decision: 'deny' },
    });
    expect(again.isError).toBe(true);
    expect((again.content as { text: string }[])[0]?.text).toMatch(/^approval_answered: /);
    const none = await client!.callTool({ name: 'list_approvals', arguments: {} });
    expect(none.structuredContent).toEqual({ approvals: [] });
  });
});

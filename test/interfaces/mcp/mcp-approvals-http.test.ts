import { readFile } from 'node:fs/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type ElicitRequest, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate } from '../../support/rust-run.ts';
import { listeningOn } from '../../support/served.ts';

const MODEL = 'qwen/qwen3-coder-30b';
const CALL = { timeout: 120_000 };

const CONFIG = {
  policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }] },
  specialists: {
    rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
  },
};

const SCRIPT = [
  { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo tree -e features' } }] } },
  { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] } },
];

function lastMessage(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  return String(messages.at(-1)?.content);
}

describe("approvals over fabric serve's /mcp (SPEC §19), driven by the SDK client over streamable HTTP", () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const closing: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closing.splice(0).reverse()) await close().catch(() => {});
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function serve(script: unknown[] = SCRIPT): Promise<string> {
    sandbox = await makeSandbox(CONFIG);
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: script as never,
    });
    const child = spawnFabric(['serve', '--port', '0', '--config', sandbox.configPath], {
      env: testEnv(sandbox, llm.url),
      cwd: sandbox.dir,
    });
    closing.push(async () => {
      child.kill('SIGKILL');
      await child;
    });
    return (await listeningOn(child)).url;
  }

  async function connect(url: string, elicit?: (request: ElicitRequest) => void): Promise<Client> {
    const client = new Client(
      { name: 'http-client', version: '1.0.0' },
      elicit === undefined ? {} : { capabilities: { elicitation: {} } },
    );
    if (elicit !== undefined)
      client.setRequestHandler(ElicitRequestSchema, (request) => {
        elicit(request);
        return { action: 'accept', content: { decision: 'approve', message: 'only the tree, please' } };
      });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
    closing.push(() => client.close());
    return client;
  }

  const runTask = (client: Client, workspace: string) =>
    client.callTool(
      { name: 'run_task', arguments: { specialist: 'rust', task: 'Show the tree', workspace } },
      undefined,
      CALL,
    );

  it('asks a client that declared elicitation inside the call, and runs the approved command for real', async () => {
    const url = await serve();
    const asked: ElicitRequest[] = [];
    const client = await connect(url, (request) => asked.push(request));
    const result = await runTask(client, await exampleCrate());
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    const run = result.structuredContent as unknown as RunResult;
    expect(run.status).toBe('succeeded');
    expect(asked).toHaveLength(1);
    expect((asked[0]!.params as { message: string }).message).toContain('`cargo tree -e features`');
    const read = lastMessage(llm!.chatRequests()[1]!.body);
    expect(read).toContain('compositor-core v0.1.0');
    expect(read).toContain('their message: only the tree, please');
    const events = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events;
    expect(events.find((event) => event.kind === 'approval_decided')).toMatchObject({
      state: 'approved',
      channel: 'mcp',
      by: 'MCP client http-client',
    });
  });

  it('gives a client without elicitation the parked run at once, and answer_approval goes on with it', async () => {
    const url = await serve();
    const client = await connect(url);
    const parked = await runTask(client, await exampleCrate());
    const run = parked.structuredContent as unknown as RunResult & { approval: { id: string } };
    expect(run.status).toBe('awaiting_approval');
    expect(llm!.chatRequests()).toHaveLength(1);
    const answered = await client.callTool(
      { name: 'answer_approval', arguments: { approval_id: run.approval.id, decision: 'approve' } },
      undefined,
      CALL,
    );
    expect(answered.isError, JSON.stringify(answered.content)).toBeFalsy();
    expect((answered.structuredContent as unknown as RunResult).status).toBe('succeeded');
    expect(lastMessage(llm!.chatRequests()[1]!.body)).toContain('compositor-core v0.1.0');
  });

  it('still answers a one-shot request without a session (no initialize), as curl would', async () => {
    const url = await serve();
    const response = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('mcp-session-id')).toBeNull();
    expect(await response.text()).toContain('run_task');
    const unknown = await fetch(`${url}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': 'no-such-session',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
    });
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('initialize again');
  });

  it('cancels the run of a session client that hangs up on its run_task', async () => {
    const url = await serve([{ hang: true }]);
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const post = (body: unknown, extra: Record<string, string> = {}, signal: AbortSignal | null = null) =>
      fetch(`${url}/mcp`, {
        method: 'POST',
        headers: { ...headers, ...extra },
        body: JSON.stringify(body),
        signal,
      });
    const init = await post({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const session = init.headers.get('mcp-session-id');
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    await init.text();
    const sid = { 'mcp-session-id': session!, 'mcp-protocol-version': '2025-06-18' };
    expect((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid)).status).toBe(202);
    const hangUp = new AbortController();
    const call = await post(
      {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: {
          name: 'run_task',
          arguments: { specialist: 'rust', task: 'Show the tree', workspace: await exampleCrate() },
        },
      },
      sid,
      hangUp.signal,
    );
    expect(call.status).toBe(200);
    const fake = llm!;
    await vi.waitFor(() => expect(fake.chatRequests()).toHaveLength(1), { timeout: 30_000 });
    hangUp.abort();
    await vi.waitFor(
      async () => {
        const { runs } = (await (await fetch(`${url}/v1/runs`)).json()) as { runs: { status: string }[] };
        expect(runs.map((run) => run.status)).toEqual(['cancelled']);
      },
      { timeout: 30_000, interval: 100 },
    );
  });
});

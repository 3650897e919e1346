import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { EVERYTHING_SERVER, FS_SERVER, processesMarked } from './mcp-fixtures.ts';

const MODEL = 'qwen/qwen3-coder-30b';

type ChatBody = {
  tools: { function: { name: string; parameters: Record<string, unknown> } }[];
  messages: { role: string; content: string; name?: string; tool_call_id?: string }[];
};

describe('a run with MCP servers attached to the units pack by configuration', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox;
  let work: string;

  beforeEach(async () => {
    // The servers run in `work/mcp`: a unique directory that finds their processes in /proc.
    work = await mkdtemp(join(tmpdir(), 'fabric-mcp-run-'));
    await mkdir(join(work, 'data'), { recursive: true });
    await mkdir(join(work, 'mcp'));
    await writeFile(join(work, 'data/length.txt'), 'The track is 3 km long.\n');
  });
  afterEach(async () => {
    await server?.stop();
    server = undefined;
    await sandbox?.cleanup();
    await rm(work, { recursive: true, force: true });
  });

  const configWith = (extraServers: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    makeSandbox({
      ...extra,
      specialists: {
        units: {
          builder: `${EXAMPLE_PACK}#buildPack`,
          mcp_servers: {
            fs: { command: process.execPath, args: [FS_SERVER, join(work, 'data')], cwd: join(work, 'mcp') },
            ev: { command: process.execPath, args: [EVERYTHING_SERVER], cwd: join(work, 'mcp') },
            ...extraServers,
          },
        },
      },
    });

  it("offers the servers' tools by namespaced name, runs them, and the results reach the model", async () => {
    sandbox = await configWith();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        {
          reply: {
            toolCalls: [
              { name: 'mcp__fs__read_text_file', arguments: { path: join(work, 'data/length.txt') } },
              { name: 'mcp__ev__get-sum', arguments: { a: 2, b: 3 } },
              { name: 'mcp__fs__read_text_file', arguments: { path: '/etc/hostname' } },
            ],
          },
        },
        {
          reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Read it.', answer: '3 km' } }] },
        },
      ],
    });
    const result = await spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'How long is the track?'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(result.stderr).not.toMatch(/failed to start/);
    expect(result.exitCode, result.stdout).toBe(0);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('succeeded');

    const [first, second] = server.chatRequests().map((request) => request.body as ChatBody);
    const offered = first?.tools.map((tool) => tool.function.name) ?? [];
    expect(offered).toEqual(
      expect.arrayContaining(['convert_units', 'mcp__fs__read_text_file', 'mcp__ev__get-sum', 'finish_task']),
    );
    const sum = first?.tools.find((tool) => tool.function.name === 'mcp__ev__get-sum');
    expect(sum?.function.parameters).toMatchObject({ type: 'object', required: ['a', 'b'] });
    expect(sum?.function.parameters).not.toHaveProperty('$schema');

    const toolMessages = second?.messages.filter((message) => message.role === 'tool') ?? [];
    expect(toolMessages.map((message) => message.content)).toEqual([
      'The track is 3 km long.',
      expect.stringMatching(/\b5\b/),
      expect.stringMatching(/^Error: MCP tool read_text_file \(server "fs"\) reported an error/),
    ]);
    expect(await processesMarked(join(work, 'mcp'))).toEqual([]);
  });

  it("policy.rules govern the servers' tools too: a denied tool and an asked-about path never reach the server", async () => {
    sandbox = await configWith(
      {},
      {
        policy: {
          rules: [
            { tool: 'mcp__ev__*', decision: 'deny' },
            { tool: 'mcp__fs__*', path: '**/secret*', decision: 'ask' },
          ],
        },
      },
    );
    await writeFile(join(work, 'data/secret.txt'), 'hidden\n');
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        {
          reply: {
            toolCalls: [
              { name: 'mcp__ev__get-sum', arguments: { a: 2, b: 3 } },
              { name: 'mcp__fs__read_text_file', arguments: { path: join(work, 'data/secret.txt') } },
              { name: 'mcp__fs__read_text_file', arguments: { path: join(work, 'data/length.txt') } },
            ],
          },
        },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Read.', answer: '3 km' } }] } },
      ],
    });
    const result = await spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'How long is the track?'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const second = server.chatRequests()[1]?.body as ChatBody;
    const results = second.messages.filter((message) => message.role === 'tool').map((m) => m.content);
    expect(results[0]).toContain('is denied by the policy, policy.rules[0] (mcp__ev__*: deny)');
    expect(results[1]).toContain(
      "needs a person's approval (policy.rules[1] (mcp__fs__* path **/secret*: ask))",
    );
    expect(results[1]).not.toContain('hidden');
    expect(results[2]).toContain('3 km');
  });

  it('fails clearly when a server cannot start, and leaves no server running', async () => {
    sandbox = await configWith({ zzz: { command: join(work, 'no-such-server'), cwd: join(work, 'mcp') } });
    server = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL, toolUse: true }] });
    const result = await spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Anything'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    // pack_load_failed is a configuration error: exit 2 (docs/errors.md).
    expect(result.exitCode).toBe(2);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe('pack_load_failed');
    expect(run.error?.message).toMatch(/MCP server "zzz" .*failed to start/);
    expect(server.chatRequests()).toHaveLength(0);
    expect(await processesMarked(join(work, 'mcp'))).toEqual([]);
  });

  it('ends every server when the run is cancelled', async () => {
    sandbox = await configWith();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [{ hang: true }],
    });
    const child = spawnFabric(['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Anything'], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
    for (let i = 0; i < 1200 && server.chatRequests().length === 0; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    const running = await processesMarked(join(work, 'mcp'));
    expect(running).toHaveLength(2);
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    expect((JSON.parse(result.stdout) as RunResult).status).toBe('cancelled');
    expect(await processesMarked(join(work, 'mcp'))).toEqual([]);
  });
});

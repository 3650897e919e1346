import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { outputText } from '../../../src/application/run/tool-dispatch.ts';
import type { FabricSettings, SpecialistPack } from '../../../src/application/ports.ts';
import { SpecialistSchema } from '../../../src/config/schema.ts';
import type { McpPack } from '../../../src/infrastructure/mcp/mcp-pack.ts';
import { createMcpWrap } from '../../../src/infrastructure/mcp/mcp-wrap.ts';
import { createStaticPack } from '../../../src/infrastructure/packs/base-pack.ts';
import { defineFinish } from '../../../src/infrastructure/packs/define-tool.ts';
import { ROOT } from '../../support/fabric-cli.ts';

const SDK = join(ROOT, 'node_modules/@modelcontextprotocol/sdk/dist/esm');

/** A stdio MCP server that tries what a hostile server would: read a secret, write outside, connect out. */
const PROBE_SERVER = `
import { readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { Server } from '${SDK}/server/index.js';
import { StdioServerTransport } from '${SDK}/server/stdio.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '${SDK}/types.js';
const tools = ['read_path', 'write_path', 'connect_port'].map((name) => ({
  name, description: name, inputSchema: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
}));
const attempt = async (name, target) => {
  if (name === 'read_path') return await readFile(target, 'utf8');
  if (name === 'write_path') { await writeFile(target, 'written by the server'); return 'written'; }
  return await new Promise((resolve, reject) => {
    const socket = connect(Number(target), '127.0.0.1', () => { socket.end(); resolve('connected'); });
    socket.on('error', reject);
  });
};
const server = new Server({ name: 'probe', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
server.setRequestHandler(CallToolRequestSchema, async (request) => {
  try {
    return { content: [{ type: 'text', text: String(await attempt(request.params.name, request.params.arguments.target)) }] };
  } catch (error) {
    return { content: [{ type: 'text', text: 'refused: ' + error.message }] };
  }
});
await server.connect(new StdioServerTransport());
`;

const context = { runId: 'r', step: 1, signal: new AbortController().signal };

describe('MCP stdio servers under sandbox.mcp', () => {
  let workspace: string;
  let outside: string;
  let listener: Server;
  let port: number;
  let pack: SpecialistPack | undefined;

  beforeEach(async () => {
    workspace = await realpath(await mkdtemp(join(tmpdir(), 'fabric-mcp-ws-')));
    outside = await realpath(await mkdtemp(join(tmpdir(), 'fabric-mcp-secret-')));
    await writeFile(join(outside, 'secret.txt'), 'TOP-SECRET-VALUE');
    await writeFile(join(workspace, 'notes.txt'), 'workspace notes');
    await writeFile(join(workspace, 'probe-server.mjs'), PROBE_SERVER);
    listener = createServer((socket) => socket.end());
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterEach(async () => {
    await pack?.close();
    pack = undefined;
    await new Promise((resolve) => listener.close(resolve));
    await rm(workspace, { recursive: true, force: true });
    await rm(outside, { recursive: true, force: true });
  });

  async function openProbe(
    sandbox: Record<string, unknown>,
    settings: FabricSettings = { searxngUrl: undefined },
  ): Promise<(tool: string, target: string) => Promise<string>> {
    const config = v.parse(SpecialistSchema, {
      builder: 'builtin:x',
      workspace,
      sandbox,
      mcp_servers: { probe: { command: 'node', args: ['probe-server.mjs'] } },
    });
    const inner = createStaticPack({
      name: 'inner',
      systemPrompt: 'test',
      finish: defineFinish('done', v.object({ summary: v.string() })),
      tools: [],
    });
    const wrap = createMcpWrap({
      hostEnv: { PATH: process.env.PATH, HOME: '/tmp' },
      baseDir: workspace,
      clientVersion: 't',
    });
    pack = wrap(inner, 'probe', config, { workspace, settings });
    await pack.open(context.signal);
    return async (tool, target) => {
      const found = pack?.tools().find((candidate) => candidate.spec.name === `mcp__probe__${tool}`);
      if (!found) throw new Error(`no tool ${tool}`);
      return outputText(await found.run({ target }, context));
    };
  }

  it('lets an unsandboxed server read, write and connect outside the workspace (the control case)', async () => {
    const call = await openProbe({});
    expect(await call('read_path', join(outside, 'secret.txt'))).toBe('TOP-SECRET-VALUE');
    expect(await call('connect_port', String(port))).toBe('connected');
  });

  it('keeps a sandboxed server to its workspace: no secret, no writes outside, no network', async () => {
    const call = await openProbe({ mcp: true, read_only_paths: [join(ROOT, 'node_modules')] });
    expect(await call('read_path', join(workspace, 'notes.txt'))).toBe('workspace notes');
    const secret = await call('read_path', join(outside, 'secret.txt'));
    expect(secret).not.toContain('TOP-SECRET-VALUE');
    expect(secret).toMatch(/^refused: .*ENOENT/);
    expect(await call('write_path', join(outside, 'planted.txt'))).toMatch(/^refused: /);
    expect(await call('write_path', join(workspace, 'out.txt'))).toBe('written');
    expect(await call('read_path', '/etc/shadow')).toMatch(/^refused: /);
    expect(await call('connect_port', String(port))).toMatch(/^refused: /);
    // The process the fabric started is bubblewrap, with the server inside it.
    const [pid] = (pack as McpPack).pids;
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0');
    expect(cmdline[0]).toMatch(/bwrap$/);
    expect(cmdline).toContain('probe-server.mjs');
  });

  it('opens the network to a sandboxed server only when sandbox.network allows it', async () => {
    const call = await openProbe({ mcp: true, network: true, read_only_paths: [join(ROOT, 'node_modules')] });
    // The sandbox has its own network namespace unless network is shared: then loopback is the host's.
    expect(await call('connect_port', String(port))).toBe('connected');
  });

  it('gives a sandboxed server the runs directory and the config file read-only', async () => {
    await mkdir(join(workspace, 'runs', 'r1'), { recursive: true });
    await writeFile(join(workspace, 'runs', 'r1', 'runlog.jsonl'), '{}\n');
    await writeFile(join(workspace, 'fabric.yaml'), 'specialists: {}\n');
    const call = await openProbe(
      { mcp: true, read_only_paths: [join(ROOT, 'node_modules')] },
      { searxngUrl: undefined, runsDir: join(workspace, 'runs'), configFile: join(workspace, 'fabric.yaml') },
    );
    expect(await call('write_path', join(workspace, 'runs', 'r1', 'runlog.jsonl'))).toMatch(
      /^refused: .*EROFS/,
    );
    expect(await call('write_path', join(workspace, 'runs', 'forged.jsonl'))).toMatch(/^refused: .*EROFS/);
    expect(await call('write_path', join(workspace, 'fabric.yaml'))).toMatch(/^refused: .*EROFS/);
    expect(await readFile(join(workspace, 'runs', 'r1', 'runlog.jsonl'), 'utf8')).toBe('{}\n');
    expect(await call('write_path', join(workspace, 'out.txt'))).toBe('written');
  });
});

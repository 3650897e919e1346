import { getEventListeners } from 'node:events';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpecialistPack, Tool, ToolContext } from '../../../src/application/ports.ts';
import type { McpServerConfig } from '../../../src/config/schema.ts';
import { FabricError, ToolError } from '../../../src/domain/errors.ts';
import { type McpPack, attachMcpServers } from '../../../src/infrastructure/mcp/mcp-pack.ts';
import { createStaticPack } from '../../../src/infrastructure/packs/base-pack.ts';
import { outputText } from '../../../src/application/run/tool-dispatch.ts';
import { defineFinish } from '../../../src/infrastructure/packs/define-tool.ts';
import { EVERYTHING_SERVER, FS_SERVER, isAlive, testSettings } from './mcp-fixtures.ts';

function innerPack(): SpecialistPack & { closed: number } {
  const pack = createStaticPack({
    name: 'inner',
    systemPrompt: 'test',
    finish: defineFinish('done', v.object({ summary: v.string() })),
    tools: [],
  });
  const counted = Object.assign(pack, { closed: 0 });
  const close = pack.close.bind(pack);
  counted.close = async () => {
    counted.closed += 1;
    await close();
  };
  return counted;
}

const context = (signal = new AbortController().signal): ToolContext => ({ runId: 'r', step: 1, signal });

function tool(pack: SpecialistPack, name: string): Tool {
  const found = pack.tools().find((candidate) => candidate.spec.name === name);
  if (!found) throw new Error(`no tool ${name}: ${pack.tools().map((t) => t.spec.name)}`);
  return found;
}

describe('McpPack with the real filesystem and everything servers', () => {
  let dir: string;
  let pack: McpPack | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fabric-mcp-pack-'));
    await mkdir(join(dir, 'data'));
    await writeFile(join(dir, 'data/hello.txt'), 'hello from the workspace\n');
  });
  afterEach(async () => {
    await pack?.close();
    pack = undefined;
    await rm(dir, { recursive: true, force: true });
  });

  const servers = (): Record<string, McpServerConfig> => ({
    fs: { command: process.execPath, args: [FS_SERVER, join(dir, 'data')], env: {} },
    ev: { command: process.execPath, args: [EVERYTHING_SERVER], env: { FABRIC_TEST_VAR: 'configured' } },
  });

  it("offers the servers' tools namespaced, with object schemas, and maps their results", async () => {
    pack = attachMcpServers(innerPack(), servers(), testSettings(dir));
    await pack.open(new AbortController().signal);
    const names = pack.tools().map((t) => t.spec.name);
    expect(names).toContain('mcp__fs__read_text_file');
    expect(names).toContain('mcp__fs__list_directory');
    expect(names).toContain('mcp__ev__get-sum');
    for (const t of pack.tools()) {
      expect(t.spec.parameters).toMatchObject({ type: 'object', properties: expect.any(Object) });
      expect(t.spec.parameters).not.toHaveProperty('$schema');
    }

    const read = tool(pack, 'mcp__fs__read_text_file');
    expect(read.validate({})).toEqual({ ok: false, message: '"path" is required' });
    expect(await read.run({ path: join(dir, 'data/hello.txt') }, context())).toBe('hello from the workspace');
    expect(await tool(pack, 'mcp__ev__get-sum').run({ a: 2, b: 3 }, context())).toMatch(/\b5\b/);
    const structured = await tool(pack, 'mcp__ev__get-structured-content').run(
      { location: 'Chicago' },
      context(),
    );
    expect(structured).toMatch(/temperature/);
    const image = await tool(pack, 'mcp__ev__get-tiny-image').run({}, context());
    expect(image).toMatch(/\[image: image\/png, \d+ bytes, not shown\]/);
  });

  it("leaves no listener on the run's signal, however many calls the run makes", async () => {
    pack = attachMcpServers(innerPack(), servers(), testSettings(dir));
    await pack.open(new AbortController().signal);
    const run = new AbortController();
    const sum = tool(pack, 'mcp__ev__get-sum');
    for (let call = 0; call < 12; call += 1) await sum.run({ a: call, b: 1 }, context(run.signal));
    expect(getEventListeners(run.signal, 'abort')).toHaveLength(0);
  });

  it('gives stdio servers PATH, HOME and their configured env, nothing else of the fabric', async () => {
    const settings = testSettings(dir);
    pack = attachMcpServers(innerPack(), servers(), settings);
    await pack.open(new AbortController().signal);
    const text = outputText(await tool(pack, 'mcp__ev__get-env').run({}, context()));
    const env = JSON.parse(text) as Record<string, string>;
    expect(env.FABRIC_TEST_VAR).toBe('configured');
    expect(env.PATH).toBe(settings.baseEnv.PATH);
    expect(env.HOME).toBe(settings.baseEnv.HOME);
    // Whatever else the server sees is what node itself adds, never the parent's variables.
    for (const key of Object.keys(process.env)) {
      if (!['PATH', 'HOME'].includes(key)) expect(env).not.toHaveProperty(key);
    }
  });

  it('turns an isError result into a ToolError', async () => {
    pack = attachMcpServers(innerPack(), servers(), testSettings(dir));
    await pack.open(new AbortController().signal);
    const read = tool(pack, 'mcp__fs__read_text_file');
    await expect(read.run({ path: '/etc/hostname' }, context())).rejects.toThrow(ToolError);
    await expect(read.run({ path: '/etc/hostname' }, context())).rejects.toThrow(
      /read_text_file \(server "fs"\) reported an error: .*(denied|outside)/i,
    );
  });

  it('turns a server that dies mid-run into tool errors, and still closes', async () => {
    const inner = innerPack();
    pack = attachMcpServers(inner, servers(), testSettings(dir));
    await pack.open(new AbortController().signal);
    const [fsPid, evPid] = pack.pids;
    expect(fsPid).toBeTypeOf('number');
    process.kill(fsPid!, 'SIGKILL');
    for (let i = 0; i < 100 && (await isAlive(fsPid!)); i += 1) await new Promise((r) => setTimeout(r, 20));
    const read = tool(pack, 'mcp__fs__read_text_file');
    const path = join(dir, 'data/hello.txt');
    // Whether the client has noticed the exit yet or the call finds out, the model gets a tool error.
    await expect(read.run({ path }, context())).rejects.toThrow(ToolError);
    for (let i = 0; i < 100; i += 1) {
      const error = await read.run({ path }, context()).catch((e: unknown) => e);
      if (error instanceof ToolError && /no longer running/.test(error.message)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await expect(read.run({ path }, context())).rejects.toThrow(/MCP server "fs" is no longer running/);
    // The other server is unaffected.
    expect(await tool(pack, 'mcp__ev__echo').run({ message: 'still here' }, context())).toMatch(/still here/);
    await pack.close();
    expect(inner.closed).toBe(1);
    expect(await isAlive(evPid!)).toBe(false);
  });

  it('fails to open when a server cannot start, naming it, and close ends the one that did', async () => {
    const inner = innerPack();
    pack = attachMcpServers(
      inner,
      { ...servers(), broken: { command: join(dir, 'no-such-command'), args: [], env: {} } },
      testSettings(dir),
    );
    const error = await pack.open(new AbortController().signal).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FabricError);
    expect((error as FabricError).code).toBe('pack_load_failed');
    expect((error as FabricError).message).toMatch(/MCP server "broken" .*failed to start.*ENOENT/);
    const pids = pack.pids;
    expect(pids.length).toBe(2);
    await pack.close();
    expect(inner.closed).toBe(1);
    for (const pid of pids) expect(await isAlive(pid)).toBe(false);
  });

  it('stops opening when cancelled and leaves no process behind', async () => {
    pack = attachMcpServers(innerPack(), servers(), testSettings(dir));
    const controller = new AbortController();
    const opening = pack.open(controller.signal);
    setTimeout(() => controller.abort(new Error('cancelled')), 30);
    await expect(opening).rejects.toThrow(/cancelled/);
    const pids = pack.pids;
    await pack.close();
    for (const pid of pids) expect(await isAlive(pid)).toBe(false);
  });

  it('cancels a tool call in flight', async () => {
    pack = attachMcpServers(innerPack(), servers(), testSettings(dir));
    await pack.open(new AbortController().signal);
    const controller = new AbortController();
    const long = tool(pack, 'mcp__ev__trigger-long-running-operation').run(
      { duration: 30, steps: 30 },
      context(controller.signal),
    );
    setTimeout(() => controller.abort(new Error('cancelled')), 200);
    await expect(long).rejects.toThrow(/cancelled/);
  });
});

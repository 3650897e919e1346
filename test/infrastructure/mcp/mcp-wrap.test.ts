import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as v from 'valibot';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SpecialistConfig } from '../../../src/config/schema.ts';
import { SpecialistSchema } from '../../../src/config/schema.ts';
import { McpPack } from '../../../src/infrastructure/mcp/mcp-pack.ts';
import { createMcpWrap } from '../../../src/infrastructure/mcp/mcp-wrap.ts';
import { createStaticPack } from '../../../src/infrastructure/packs/base-pack.ts';
import { defineFinish } from '../../../src/infrastructure/packs/define-tool.ts';
import { FS_SERVER } from './mcp-fixtures.ts';

const inner = () =>
  createStaticPack({
    name: 'inner',
    systemPrompt: 'test',
    finish: defineFinish('done', v.object({ summary: v.string() })),
    tools: [],
  });

const specialist = (entry: Record<string, unknown>): SpecialistConfig =>
  v.parse(SpecialistSchema, { builder: 'builtin:x', ...entry });

describe('createMcpWrap, the registry hook', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await realpath(await mkdtemp(join(tmpdir(), 'fabric-mcp-wrap-')));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const wrap = () =>
    createMcpWrap({
      hostEnv: { PATH: process.env.PATH, HOME: '/tmp', SECRET: 'x' },
      baseDir: dir,
      clientVersion: 't',
    });

  it('returns the pack itself when the specialist has no mcp_servers', () => {
    const pack = inner();
    expect(wrap()(pack, 'units', specialist({}), { workspace: dir })).toBe(pack);
  });

  it('runs a stdio server in the workspace by default, so "." is the workspace', async () => {
    const config = specialist({ mcp_servers: { fs: { command: process.execPath, args: [FS_SERVER, '.'] } } });
    const pack = wrap()(inner(), 'units', config, { workspace: dir });
    expect(pack).toBeInstanceOf(McpPack);
    try {
      await pack.open(new AbortController().signal);
      const list = pack.tools().find((tool) => tool.spec.name === 'mcp__fs__list_allowed_directories');
      const context = { runId: 'r', step: 1, signal: new AbortController().signal };
      expect(await list?.run({}, context)).toContain(dir);
    } finally {
      await pack.close();
    }
  });
});

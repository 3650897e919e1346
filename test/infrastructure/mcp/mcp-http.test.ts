import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attachMcpServers } from '../../../src/infrastructure/mcp/mcp-pack.ts';
import { createStaticPack } from '../../../src/infrastructure/packs/base-pack.ts';
import { defineFinish } from '../../../src/infrastructure/packs/define-tool.ts';
import { EVERYTHING_SERVER, testSettings } from './mcp-fixtures.ts';

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise((resolve) => probe.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

describe('an MCP server attached over streamable HTTP', () => {
  let child: ChildProcess;
  let url: string;

  beforeAll(async () => {
    const port = await freePort();
    child = spawn(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port) },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes('listening')) resolve();
      });
      child.once('exit', () => reject(new Error(`server-everything exited: ${stderr}`)));
    });
    url = `http://127.0.0.1:${port}/mcp`;
  });
  afterAll(() => {
    child?.kill('SIGKILL');
  });

  it('lists and calls its tools, with headers configured', async () => {
    const inner = createStaticPack({
      name: 'inner',
      systemPrompt: 'test',
      finish: defineFinish('done', v.object({ summary: v.string() })),
      tools: [],
    });
    const pack = attachMcpServers(
      inner,
      { remote: { url, headers: { 'X-Fabric-Test': 'yes' } } },
      testSettings(tmpdir()),
    );
    try {
      await pack.open(new AbortController().signal);
      const echo = pack.tools().find((tool) => tool.spec.name === 'mcp__remote__echo');
      expect(echo).toBeDefined();
      expect(pack.pids).toEqual([]);
      const context = { runId: 'r', step: 1, signal: new AbortController().signal };
      expect(await echo?.run({ message: 'over http' }, context)).toMatch(/over http/);
    } finally {
      await pack.close();
    }
  });
});

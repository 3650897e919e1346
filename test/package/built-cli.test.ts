import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/domain/run-result.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { ROOT, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';

/** A pack in a folder of its own (no package.json, no node_modules) that imports only agent-fabric. */
const PROBE_PACK = `import { ToolError, createStaticPack, defineFinish, definePack, defineTool, v } from 'agent-fabric';

const probe = defineTool({
  name: 'probe',
  description: 'Refuses, as a sandbox would.',
  input: v.object({ path: v.string() }),
  run: async ({ path }) => {
    throw new ToolError(\`refused: \${path}\`, { securityEvent: { eventType: 'sandbox_violation', rule: 'probe' } });
  },
});

export const buildProbe = definePack((context) =>
  createStaticPack({
    name: context.specialist,
    systemPrompt: 'Probe, then finish.',
    finish: defineFinish('Report.', v.object({ summary: v.string() })),
    tools: [probe],
  }),
);
`;

const PROBE_SCRIPT = [
  { reply: { toolCalls: [{ name: 'probe', arguments: { path: '/etc' } }] } },
  { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'probed' } }] } },
];

// Loader hooks that write every module URL the CLI loads to stderr (fd 2: they run on the loader's thread).
const HOOKS = `import { writeSync } from 'node:fs';
export async function load(url, context, next) {
  writeSync(2, \`loaded-module \${url}\\n\`);
  return next(url, context);
}
`;

describe('the built CLI (dist/, as the package ships it)', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox({ specialists: { probe: { builder: './probe.ts#buildProbe' } } });
    await writeFile(join(sandbox.dir, 'probe.ts'), PROBE_PACK);
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  it('prints its help without loading a TypeScript loader or its own sources', async () => {
    await writeFile(join(sandbox.dir, 'log-hooks.mjs'), HOOKS);
    await writeFile(
      join(sandbox.dir, 'log.mjs'),
      `import { register } from 'node:module';\nregister('./log-hooks.mjs', import.meta.url);\n`,
    );
    const result = await execa(
      process.execPath,
      ['--import', join(sandbox.dir, 'log.mjs'), join(ROOT, 'bin/fabric.mjs'), '--help'],
      { cwd: sandbox.dir, reject: false, env: { NO_COLOR: '1' } },
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Usage: fabric <command>');
    const loaded = [...result.stderr.matchAll(/^loaded-module (.*)$/gm)].map((match) => match[1] ?? '');
    expect(loaded.some((url) => url.includes('/dist/interfaces/cli/'))).toBe(true);
    expect(loaded.filter((url) => url.includes('/tsx/') || url.endsWith('.ts'))).toEqual([]);
  });

  for (const runtime of ['node', 'deno'] as const) {
    it(`runs a TypeScript pack from a folder with no package.json on ${runtime}, its ToolError the runtime's own`, async () => {
      server = await startFakeLlmServer({
        flavor: 'lm_studio',
        models: [{ id: MODEL, toolUse: true }],
        script: PROBE_SCRIPT,
      });
      const result = await spawnFabric(
        ['run', '--specialist', 'probe', '--json', '--config', sandbox.configPath, 'Probe /etc'],
        { env: testEnv(sandbox, server.url), cwd: sandbox.dir, runtime, build: true },
      );
      expect(result.stderr).not.toContain('Error:');
      expect(result.exitCode).toBe(0);
      const run = JSON.parse(result.stdout) as RunResult;
      expect(run).toMatchObject({ status: 'succeeded', payload: { summary: 'probed' } });
      const events = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events;
      // Recognised as a ToolError with a security event, not as a crash of the tool.
      expect(events.find((event) => event.kind === 'security_event')).toMatchObject({ rule: 'probe' });
      expect(events.find((event) => event.kind === 'tool_error')).toMatchObject({ reason: 'refused' });
    });
  }
});

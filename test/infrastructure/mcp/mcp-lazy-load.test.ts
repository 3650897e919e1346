import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { SOURCE_CLI, type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';

// Loader hooks that write every package module the CLI loads to stderr. They run on the loader's
// thread, so they write to fd 2 directly rather than through process.stderr.
const HOOKS = `import { writeSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.includes('/node_modules/')) writeSync(2, \`loaded-module \${url}\\n\`);
  return next(url, context);
}
`;
const REGISTER = `import { register } from 'node:module';
register('./log-hooks.mjs', import.meta.url);
`;

/** The package names in the hooks' lines, e.g. `valibot`, `@modelcontextprotocol/sdk`. */
function packagesLoaded(stderr: string): Set<string> {
  const names = new Set<string>();
  for (const match of stderr.matchAll(/^loaded-module .*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//gm)) {
    names.add(match[1] ?? '');
  }
  return names;
}

describe('what a run loads', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('loads neither the MCP SDK (nor its zod and ajv) nor execa for a specialist without mcp_servers', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'km', to: 'm' } }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 's', answer: '1000 m' } }] } },
      ],
    });
    sandbox = await makeSandbox();
    await writeFile(join(sandbox.dir, 'log-hooks.mjs'), HOOKS);
    await writeFile(join(sandbox.dir, 'log-packages.mjs'), REGISTER);
    const result = await execa(
      process.execPath,
      [
        '--import',
        join(sandbox.dir, 'log-packages.mjs'),
        SOURCE_CLI,
        'run',
        '--specialist',
        'units',
        '--json',
        '--config',
        sandbox.configPath,
        'Convert 1 km to m',
      ],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/tmp',
          ...testEnv(sandbox, server.url),
        },
        extendEnv: false,
        cwd: sandbox.dir,
        stdin: 'ignore',
        reject: false,
      },
    );
    expect(result.exitCode).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ status: 'succeeded', steps: 2 });
    const loaded = packagesLoaded(result.stderr);
    // The hooks saw the run: the pack's own schema library was loaded.
    expect(loaded).toContain('valibot');
    for (const name of ['@modelcontextprotocol/sdk', 'zod', 'ajv', 'execa'])
      expect(loaded).not.toContain(name);
  });
});

import { cp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { EXAMPLE_PACK, ROOT, type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';
import { listeningOn, runToEnd } from '../../support/served.ts';

// Issue 20: a custom pack's module and the modules a run loads lazily (the built-in packs,
// execa, the MCP SDK) are imported once per process. Once a TypeScript pack has registered module
// hooks on Node 20, every dynamic import is a round trip to the hooks' thread; a server running
// many runs must not pay it per run. A resolve hook registered first (it then sees every
// resolution the fabric's own hooks pass on) writes each dynamic import's specifier to stderr.
const HOOKS = `import { writeSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  if (context.parentURL?.includes('/dist/')) writeSync(2, \`resolve \${specifier}\\n\`);
  return next(specifier, context);
}
`;
const REGISTER = `import { register } from 'node:module';
register('./log-hooks.mjs', import.meta.url);
`;

const MODEL = 'qwen/qwen3-coder-30b';
const RUST_SCRIPT = [
  { reply: { toolCalls: [{ name: 'cargo_check', arguments: {} }] } },
  { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'It compiles.' } }] } },
];

describe('what a server imports for its runs', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('imports a TypeScript pack, a built-in pack and execa once, however many runs use them', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        ...CONVERSION_SCRIPT,
        ...RUST_SCRIPT,
        ...CONVERSION_SCRIPT,
        ...RUST_SCRIPT,
        ...CONVERSION_SCRIPT,
      ],
    });
    sandbox = await makeSandbox({
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack` },
        rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
      },
    });
    const crate = join(sandbox.dir, 'crate');
    await cp(join(ROOT, 'examples/compositor'), crate, {
      recursive: true,
      filter: (source) => !source.includes('/target'),
    });
    await writeFile(join(sandbox.dir, 'log-hooks.mjs'), HOOKS);
    await writeFile(join(sandbox.dir, 'log-packages.mjs'), REGISTER);
    const serve = execa(
      process.execPath,
      [
        '--import',
        join(sandbox.dir, 'log-packages.mjs'),
        join(ROOT, 'bin/fabric.mjs'),
        'serve',
        '--port',
        '0',
        '--config',
        sandbox.configPath,
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
    let output = () => '';
    try {
      const { url, stderr } = await listeningOn(serve);
      output = stderr;
      // One run at a time: the scripted server answers in order.
      for (const body of [
        { specialist: 'units', task: 'Convert 3 km to miles' },
        { specialist: 'rust', task: 'Check it compiles', workspace: crate },
        { specialist: 'units', task: 'Convert 3 km to miles' },
        { specialist: 'rust', task: 'Check it compiles', workspace: crate },
        { specialist: 'units', task: 'Convert 3 km to miles' },
      ]) {
        expect((await runToEnd(url, body)).status, stderr()).toBe('succeeded');
      }
    } finally {
      serve.kill('SIGTERM');
    }
    await serve;
    const resolved = [...output().matchAll(/^resolve (.+)$/gm)].map((match) => match[1] ?? '');
    const count = (test: (specifier: string) => boolean) => resolved.filter(test).length;
    // The hooks saw the runs' dynamic imports (builtin-packs.ts imports the rust pack by this specifier), each once.
    expect(
      count((specifier) => specifier.endsWith('/pack.ts')),
      resolved.join('\n'),
    ).toBe(1);
    expect(
      count((specifier) => specifier === '../packs/rust/rust-pack.js'),
      resolved.join('\n'),
    ).toBe(1);
    expect(
      count((specifier) => specifier === 'execa'),
      resolved.join('\n'),
    ).toBe(1);
  }, 120_000);
});

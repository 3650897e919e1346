import { existsSync } from 'node:fs';
import { appendFile, cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../src/domain/run-result.ts';
import { parseRunlog } from '../../src/infrastructure/runlog/parse-runlog.ts';
import { compositorResponder } from '../support/battery-fakes.ts';
import { DENO, ROOT } from '../support/fabric-cli.ts';
import { type Runtime, userRuntimes } from '../support/runtimes.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../support/scripts.ts';
import { listeningOn, runToEnd } from '../support/served.ts';

// SPEC §14, as a new user meets it: the tarball `npm pack` makes, installed into an empty prefix,
// used from an empty directory outside the repository, on Node and on Deno. `npm test` builds
// dist/ first; the pack skips its prepack build so the test packs what the suite just tested.

const MODEL = 'qwen/qwen3-coder-30b';
/** git and the daemon commit as someone, whatever the machine's git config says. */
const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'Fabric Test',
  GIT_AUTHOR_EMAIL: 'fabric@example.invalid',
  GIT_COMMITTER_NAME: 'Fabric Test',
  GIT_COMMITTER_EMAIL: 'fabric@example.invalid',
};
let work: string;
let prefix: string;
let pkg: string;

beforeAll(async () => {
  if (!existsSync(join(ROOT, 'dist/index.js')))
    throw new Error('dist/ is missing: run `npm run build` first');
  work = await mkdtemp(join(tmpdir(), 'fabric-install-'));
  prefix = join(work, 'prefix');
  const packed = await execa('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], {
    cwd: ROOT,
  });
  const tarball = join(work, (JSON.parse(packed.stdout) as { filename: string }[])[0]?.filename ?? '');
  // The registry's packages come from npm's cache when it has them (the repository's own install).
  await execa(
    'npm',
    ['install', '--global', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', tarball],
    { cwd: work },
  );
  pkg = join(prefix, 'lib/node_modules/agent-fabric');
}, 180_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

/** The installed `fabric` on each runtime, as the README tells a user to start it. */
function command(runtime: Runtime): [string, string[]] {
  if (runtime.kind === 'node') return [join(prefix, 'bin/fabric'), []];
  return [DENO, ['run', '-A', '--quiet', '--config', join(pkg, 'deno.json'), join(pkg, 'bin/fabric.mjs')]];
}

describe('the packed and installed package', () => {
  it('ships the build, the default config, the example compositor, the docs and the licence, and no sources', () => {
    for (const file of [
      'dist/index.js',
      'dist/index.d.ts',
      'config/fabric.yaml',
      'examples/compositor/Cargo.toml',
      'examples/compositor/src/region.rs',
      'docs/packs.md',
      'LICENSE',
      'deno.json',
    ])
      expect(existsSync(join(pkg, file)), file).toBe(true);
    expect(existsSync(join(pkg, 'src'))).toBe(false);
    expect(existsSync(join(pkg, 'examples/compositor/target'))).toBe(false);
  });

  for (const runtime of userRuntimes()) {
    describe(`used on ${runtime.name} from an empty directory`, () => {
      let dir: string;
      let server: FakeLlmServer | undefined;
      const [bin, prefixArgs] = [() => command(runtime)[0], () => command(runtime)[1]];
      // The installed `fabric` starts with `#!/usr/bin/env node`: the Node first on PATH runs it.
      const env = (url: string) => ({
        PATH: [runtime.pathDir, process.env.PATH ?? '/usr/bin:/bin'].filter(Boolean).join(':'),
        HOME: process.env.HOME ?? '/tmp',
        LM_STUDIO_URL: url,
        OLLAMA_HOST: '127.0.0.1:9',
        NO_COLOR: '1',
      });
      const fabric = (
        args: string[],
        url = 'http://127.0.0.1:9',
        cwd = dir,
        extra: Record<string, string> = {},
      ) =>
        execa(bin(), [...prefixArgs(), ...args], {
          cwd,
          env: { ...env(url), ...extra },
          extendEnv: false,
          reject: false,
          stdin: 'ignore',
        });

      beforeAll(async () => {
        dir = await mkdtemp(join(tmpdir(), `fabric-user-${runtime.kind}-`));
      });
      afterAll(async () => {
        await server?.stop();
        await rm(dir, { recursive: true, force: true });
      });

      it('writes a starter config and custom pack with fabric init, and runs the pack at once', async () => {
        const init = await fabric(['init']);
        expect(init.exitCode, init.stderr).toBe(0);
        // The Node the installed command runs on is the one this runtime names.
        if (runtime.kind === 'node') {
          const version = await execa('node', ['-p', 'process.versions.node'], { env: env('') });
          expect(runtime.name.startsWith('node 2') && runtime.name).toContain(version.stdout.split('.')[0]);
        }
        // The control plane has tests of its own; here it would only boot a database per runtime.
        await appendFile(join(dir, 'fabric.yaml'), 'control: { enabled: false }\n');
        server = await startFakeLlmServer({
          flavor: 'lm_studio',
          models: [{ id: MODEL, toolUse: true }],
          script: CONVERSION_SCRIPT,
        });
        const run = await fabric(
          ['run', '--specialist', 'units', '--json', 'Convert 3 km to miles'],
          server.url,
        );
        expect(run.exitCode, run.stderr).toBe(0);
        const result = JSON.parse(run.stdout) as RunResult;
        expect(result).toMatchObject({ status: 'succeeded', payload: { answer: '1.864114 mi' } });
        expect(result.runlog.startsWith(join(dir, 'runs'))).toBe(true);
        await server.stop();
        server = undefined;
      });

      it('runs the rust specialist on the crate in the working directory', async () => {
        await cp(join(pkg, 'examples/compositor'), dir, { recursive: true });
        server = await startFakeLlmServer({
          flavor: 'lm_studio',
          models: [{ id: MODEL, toolUse: true }],
          script: [
            { reply: { toolCalls: [{ name: 'list_files', arguments: {} }] } },
            { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked around.' } }] } },
          ],
        });
        const run = await fabric(['run', '--specialist', 'rust', '--json', 'Look around'], server.url);
        expect(run.exitCode, run.stderr).toBe(0);
        const result = JSON.parse(run.stdout) as RunResult;
        expect(result.status).toBe('succeeded');
        const events = parseRunlog(await readFile(result.runlog, 'utf8'), result.runlog).events;
        expect(events[0]).toMatchObject({ kind: 'run_start', workspace: dir });
        expect(JSON.stringify(events.find((event) => event.kind === 'tool_result'))).toContain('Cargo.toml');
        await server.stop();
        server = undefined;
      }, 120_000);

      // The README's first walkthrough, on every runtime a user may install on (issue 34): one demo
      // each, from the one tarball the suite packed (demo.test.ts covers the demo's details).
      it('runs the README demo with no model server: the scripted model edits a copy of the shipped crate', async () => {
        const tmp = await mkdtemp(join(tmpdir(), 'fabric-user-demo-'));
        try {
          const demo = await fabric(['demo'], 'http://127.0.0.1:9', dir, { TMPDIR: tmp });
          expect(demo.exitCode, demo.stderr).toBe(0);
          expect(demo.stdout).toMatch(/Demo run \S+ succeeded \(model demo-scripted, scripted\)/);
          const place = /Everything is in (\S+):/.exec(demo.stdout)?.[1] ?? '';
          expect(place.startsWith(tmp), demo.stdout).toBe(true);
          const region = await readFile(join(place, 'compositor/src/region.rs'), 'utf8');
          expect(region).toContain('pub fn contains_point(&self, x: i32, y: i32) -> bool {');
          const runs = await fabric(['runs'], 'http://127.0.0.1:9', place);
          expect(runs.exitCode, runs.stderr).toBe(0);
          expect(runs.stdout).toMatch(/succeeded .*\(fabric demo\) Add Region::contains_point/);
        } finally {
          await rm(tmp, { recursive: true, force: true });
        }
      }, 120_000);

      it('serves runs of its custom pack over HTTP', async () => {
        server = await startFakeLlmServer({
          flavor: 'lm_studio',
          models: [{ id: MODEL, toolUse: true }],
          script: [...CONVERSION_SCRIPT, ...CONVERSION_SCRIPT],
        });
        const serve = execa(bin(), [...prefixArgs(), 'serve', '--port', '0'], {
          cwd: dir,
          env: env(server.url),
          extendEnv: false,
          reject: false,
          stdin: 'ignore',
        });
        let output = () => '';
        try {
          const { url, stderr } = await listeningOn(serve);
          output = stderr;
          for (let round = 0; round < 2; round++) {
            const run = await runToEnd(url, { specialist: 'units', task: 'Convert 3 km to miles' });
            expect(run, stderr()).toMatchObject({ status: 'succeeded', payload: { answer: '1.864114 mi' } });
          }
        } finally {
          serve.kill('SIGTERM');
        }
        expect((await serve).exitCode, output()).toBe(0);
        await server.stop();
        server = undefined;
      });

      // The README's walkthroughs, as written, from the example `fabric init --example` copies out
      // of the installed package (a directory of the user's own: no fabric.yaml, so the shipped
      // config, the embedded control plane included).
      it('runs the README daemon walkthrough on the example compositor', async () => {
        const walk = await mkdtemp(join(tmpdir(), `fabric-walk-${runtime.kind}-`));
        try {
          const init = await fabric(['init', '--example', 'compositor'], undefined, walk);
          expect(init.exitCode, init.stderr).toBe(0);
          server = await startFakeLlmServer({
            flavor: 'lm_studio',
            models: [{ id: MODEL, toolUse: true }],
            respond: compositorResponder(() => false),
          });
          const repo = join(walk, 'compositor');
          const git = (...args: string[]) => execa('git', args, { cwd: repo, env: GIT_IDENTITY });
          await writeFile(join(repo, '.gitignore'), 'target/\n');
          await git('init', '-q', '-b', 'main');
          await git('add', '-A');
          await git('commit', '-qm', 'compositor core and its OpenSpec change');
          const daemon = await fabric(['daemon', '--once'], server.url, repo, {
            LM_STUDIO_MODEL: MODEL,
            ...GIT_IDENTITY,
          });
          expect(daemon.exitCode, daemon.stderr).toBe(0);
          expect(daemon.stdout + daemon.stderr).toMatch(/add-region-queries 1\.1 committed/);
          expect(daemon.stdout + daemon.stderr).toMatch(/add-region-queries 1\.2 committed/);
          const tasks = await readFile(join(repo, 'openspec/changes/add-region-queries/tasks.md'), 'utf8');
          expect(tasks).toContain('- [x] 1.1');
          expect(tasks).toContain('- [x] 1.2');
          expect((await git('log', '--oneline')).stdout.trim().split('\n')).toHaveLength(3);
          // The daemon's runs, state and embedded database are not in the work tree (SPEC §11.1).
          expect((await git('status', '--porcelain', '--untracked-files=all')).stdout).toBe('');
          const status = await fabric(['daemon', 'status', '--json'], server.url, repo);
          expect(status.exitCode, status.stderr).toBe(0);
          expect(JSON.parse(status.stdout)).toMatchObject({
            changes: [{ id: 'add-region-queries', done: 2, pending: 0 }],
          });
        } finally {
          await server?.stop();
          server = undefined;
          await rm(walk, { recursive: true, force: true });
        }
      }, 180_000);

      it('runs the README battery walkthrough on the example compositor', async () => {
        const walk = await mkdtemp(join(tmpdir(), `fabric-walk-${runtime.kind}-`));
        try {
          expect((await fabric(['init', '--example', 'compositor'], undefined, walk)).exitCode).toBe(0);
          server = await startFakeLlmServer({
            flavor: 'lm_studio',
            models: [{ id: MODEL, toolUse: true }],
            respond: compositorResponder(() => false),
          });
          const battery = await fabric(
            ['battery', 'compositor-battery.yaml', '--report', 'battery.md'],
            server.url,
            walk,
          );
          expect(battery.exitCode, battery.stderr).toBe(0);
          const report = await readFile(join(walk, 'battery.md'), 'utf8');
          expect(report).toContain('region-contains');
          expect(report).toContain('rect-center');
          expect(report).toMatch(/2\/2|100 ?%/);
        } finally {
          await server?.stop();
          server = undefined;
          await rm(walk, { recursive: true, force: true });
        }
      }, 180_000);

      it('serves its specialists and runs over MCP on stdio', async () => {
        server = await startFakeLlmServer({
          flavor: 'lm_studio',
          models: [{ id: MODEL, toolUse: true }],
          script: CONVERSION_SCRIPT,
        });
        const transport = new StdioClientTransport({
          command: bin(),
          args: [...prefixArgs(), 'mcp'],
          env: env(server.url),
          cwd: dir,
          stderr: 'pipe',
        });
        const client = new Client({ name: 'install-test', version: '1.0.0' });
        await client.connect(transport);
        try {
          const specialists = await client.callTool({ name: 'list_specialists', arguments: {} });
          const names = (
            specialists.structuredContent as { specialists: { name: string }[] }
          ).specialists.map((s) => s.name);
          expect(names).toEqual(expect.arrayContaining(['units', 'rust', 'research']));
          const result = await client.callTool(
            { name: 'run_task', arguments: { specialist: 'units', task: 'Convert 3 km to miles' } },
            undefined,
            { timeout: 60_000 },
          );
          expect(result.structuredContent).toMatchObject({ status: 'succeeded' });
        } finally {
          await client.close();
        }
      });
    });
  }
});

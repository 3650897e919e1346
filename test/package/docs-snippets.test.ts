import { appendFile, chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { execa } from 'execa';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.ts';
import { ROOT } from '../support/fabric-cli.ts';
import { testNodeBinary } from '../support/runtimes.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../support/scripts.ts';

// SPEC §14: the snippets of the README and docs/packs.md run as written, against the build and
// the fake model server. `fabric` is the build on PATH, as an installed package puts it there;
// `agent-fabric` resolves to this package, as it does in a project that installed it.

const MODEL = 'qwen/qwen3-coder-30b';
const DOCS = ['README.md', 'docs/packs.md'];

interface Snippet {
  readonly file: string;
  readonly line: number;
  readonly lang: string;
  readonly text: string;
}

function snippetsOf(file: string, markdown: string): Snippet[] {
  const found: Snippet[] = [];
  for (const match of markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)) {
    const line = markdown.slice(0, match.index).split('\n').length;
    found.push({ file, line, lang: match[1] ?? '', text: match[2] ?? '' });
  }
  return found;
}

const snippets = (
  await Promise.all(DOCS.map(async (file) => snippetsOf(file, await readFile(join(ROOT, file), 'utf8'))))
).flat();
const name = (snippet: Snippet) => `${snippet.file}:${snippet.line}`;

/** Shell lines the test runs: the ones a user without a model server can run against the fake. */
const RUNNABLE =
  /^(?:echo .*\| )?fabric (?:init|specialists|completion|run --specialist units)\b|^npx deno run /;

let work: string;
let bin: string;
let server: FakeLlmServer | undefined;

async function fakeServer(script: ScriptedTurn[]): Promise<string> {
  await server?.stop();
  server = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL, toolUse: true }], script });
  return server.url;
}

function env(lmStudioUrl: string): Record<string, string> {
  return {
    PATH: `${bin}:${join(ROOT, 'node_modules/.bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: process.env.HOME ?? '/tmp',
    LM_STUDIO_URL: lmStudioUrl,
    OLLAMA_HOST: '127.0.0.1:9',
    NO_COLOR: '1',
  };
}

/** A fresh directory where `fabric init` ran, with agent-fabric installed beside it. */
async function initialised(): Promise<string> {
  const dir = await mkdtemp(join(work, 'user-'));
  await mkdir(join(dir, 'node_modules'));
  await symlink(ROOT, join(dir, 'node_modules/agent-fabric'));
  const init = await execa('fabric', ['init'], {
    cwd: dir,
    env: env('http://127.0.0.1:9'),
    extendEnv: false,
  });
  expect(init.exitCode).toBe(0);
  return dir;
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'fabric-snippets-'));
  bin = join(work, 'bin');
  await mkdir(bin);
  await writeFile(
    join(bin, 'fabric'),
    `#!/bin/sh\nexec '${process.execPath}' '${join(ROOT, 'bin/fabric.mjs')}' "$@"\n`,
  );
  await chmod(join(bin, 'fabric'), 0o755);
});

afterAll(async () => {
  await server?.stop();
  await rm(work, { recursive: true, force: true });
});

describe('the snippets of the README and docs/packs.md', () => {
  it('finds the snippets it checks', () => {
    expect(
      snippets.filter((s) => s.lang === 'yaml' && s.text.includes('specialists:')).length,
    ).toBeGreaterThan(2);
    expect(snippets.filter((s) => s.lang === 'ts').length).toBeGreaterThan(2);
    expect(snippets.filter((s) => s.lang === 'json' && s.text.includes('mcpServers')).length).toBe(1);
  });

  for (const snippet of snippets.filter((s) => s.lang === 'yaml' && s.text.includes('specialists:'))) {
    it(`${name(snippet)}: a config that loads beside the starter pack, its pack modules present`, async () => {
      const dir = await initialised();
      await mkdir(join(dir, 'data'));
      await writeFile(join(dir, 'snippet.yaml'), snippet.text);
      // The variables a snippet names for keys (llm.backends[].api_key_env) are set, as a user sets them.
      const keys = [...snippet.text.matchAll(/api_key_env: (\w+)/g)].map((m) => [m[1] ?? '', 'sk-doc-key']);
      const config = await loadConfig({
        cwd: dir,
        configPath: join(dir, 'snippet.yaml'),
        env: Object.fromEntries(keys),
      });
      for (const spec of Object.values(config.specialists)) {
        if (spec.builder.startsWith('builtin:')) continue;
        await expect(
          readFile(join(dir, spec.builder.slice(0, spec.builder.indexOf('#')))),
        ).resolves.toBeTruthy();
      }
    });
  }

  for (const snippet of snippets.filter((s) => s.lang === 'json' && s.text.includes('mcpServers'))) {
    it(`${name(snippet)}: an MCP client config whose server starts and lists the specialists`, async () => {
      const dir = await initialised();
      const servers = (
        JSON.parse(snippet.text.replaceAll('/path/to/', `${dir}/`)) as {
          mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
        }
      ).mcpServers;
      for (const entry of Object.values(servers)) {
        const transport = new StdioClientTransport({
          command: entry.command,
          args: entry.args,
          env: { ...env('http://127.0.0.1:9'), ...entry.env },
          stderr: 'pipe',
        });
        const client = new Client({ name: 'snippet-test', version: '1.0.0' });
        await client.connect(transport);
        try {
          const listed = await client.callTool({ name: 'list_specialists', arguments: {} });
          const names = (listed.structuredContent as { specialists: { name: string }[] }).specialists;
          expect(names.map((s) => s.name)).toContain('units');
        } finally {
          await client.close();
        }
      }
    });
  }

  for (const snippet of snippets.filter((s) => s.lang === 'ts')) {
    it(`${name(snippet)}: TypeScript that runs (a pack through fabric run, else as a script)`, async () => {
      const dir = await initialised();
      // The control plane has tests of its own; here it would boot a database per snippet.
      await appendFile(join(dir, 'fabric.yaml'), 'control: { enabled: false }\n');
      if (snippet.text.includes('export const buildPack')) {
        await writeFile(join(dir, 'snippet.pack.ts'), snippet.text);
        const config = parseYaml(await readFile(join(dir, 'fabric.yaml'), 'utf8')) as {
          specialists: Record<string, unknown>;
        };
        config.specialists.snippet = { builder: './snippet.pack.ts#buildPack' };
        await writeFile(join(dir, 'fabric.yaml'), JSON.stringify(config));
        const pack = await import(join(dir, 'snippet.pack.ts'));
        const tools = (await pack.buildPack({ specialist: 'snippet', config: {}, settings: {} })).tools();
        const tool = tools[0];
        // One call of the pack's first tool with an argument of each required name, then finish.
        const args = Object.fromEntries(
          Object.keys(tool.spec.parameters.properties ?? {}).map((key) => [key, 'hello']),
        );
        const finish = { summary: 'done', result: 'HELLO', answer: 'HELLO' };
        const url = await fakeServer([
          { reply: { toolCalls: [{ name: tool.spec.name, arguments: args }] } },
          { reply: { toolCalls: [{ name: 'finish_task', arguments: finish }] } },
        ]);
        const run = await execa('fabric', ['run', '--specialist', 'snippet', '--json', 'Try it'], {
          cwd: dir,
          env: env(url),
          extendEnv: false,
          reject: false,
        });
        expect(run.exitCode, run.stderr).toBe(0);
        expect(JSON.parse(run.stdout)).toMatchObject({ status: 'succeeded' });
        return;
      }
      // An ES module (top-level await), as the docs say: `embed.mjs` on any Node; `embed.mts` as it
      // is on Node 22.18+ and 24, through tsx on Node 20.
      await writeFile(join(dir, 'snippet.mjs'), snippet.text);
      await writeFile(join(dir, 'snippet.mts'), snippet.text);
      const ways: [string, string[]][] = [
        [process.execPath, ['snippet.mjs']],
        [process.execPath, ['--import', join(ROOT, 'node_modules/tsx/dist/loader.mjs'), 'snippet.mts']],
      ];
      for (const line of ['22', '24'] as const) {
        const binary = testNodeBinary(line);
        if (binary !== undefined) ways.push([binary, ['snippet.mts']]);
      }
      for (const [binary, args] of ways) {
        const url = await fakeServer(CONVERSION_SCRIPT);
        const script = await execa(binary, args, {
          cwd: dir,
          env: env(url),
          extendEnv: false,
          reject: false,
        });
        expect(script.exitCode, `${binary} ${args.join(' ')}\n${script.stderr}`).toBe(0);
        expect(script.stdout).toContain('succeeded');
      }
    });
  }

  for (const snippet of snippets.filter(
    (s) => s.lang === 'sh' && s.text.split('\n').some((l) => RUNNABLE.test(l)),
  )) {
    it(`${name(snippet)}: the fabric commands of a shell snippet`, async () => {
      const lines = snippet.text
        .split('\n')
        .map((line) => line.replace(/\s+# .*$/, '').trim())
        .filter((line) => RUNNABLE.test(line));
      const dir = lines[0]?.startsWith('fabric init')
        ? await mkdtemp(join(work, 'empty-'))
        : lines[0]?.startsWith('npx deno')
          ? ROOT
          : await initialised();
      for (const line of lines) {
        const url = await fakeServer(CONVERSION_SCRIPT);
        const result = await execa('bash', ['-o', 'pipefail', '-c', line], {
          cwd: dir,
          env: env(url),
          extendEnv: false,
          reject: false,
        });
        expect(result.exitCode, `${line}\n${result.stderr}`).toBe(0);
      }
    });
  }
});

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, readdir } from 'node:fs/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import {
  type Sandbox,
  SOURCE_CLI,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, PATIENCE } from '../../support/killed-run.ts';
import { exampleCrate } from '../../support/rust-run.ts';

/**
 * SPEC §19's terminal channel: `fabric run` in a real pseudo-terminal (util-linux `script`)
 * prompts and runs the command on `y`, denies with a message on `m`, and Ctrl-C at the prompt
 * still cancels; without a terminal it never hangs, and `--on-approval wait` waits for an answer
 * from another terminal.
 */
const MODEL = 'qwen/qwen3-coder-30b';
const TREE = { reply: { toolCalls: [{ name: 'shell', arguments: { command: 'cargo tree -e features' } }] } };
const FINISH = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Looked at the tree.' } }] },
};
const SCRIPT = '/usr/bin/script';
/** `script` (util-linux, in Debian's essential bsdutils) gives the child a real pseudo-terminal. */
const noScript = !existsSync(SCRIPT);
if (noScript)
  console.warn(`terminal prompt tests skipped: ${SCRIPT} is missing (apt-get install -y bsdutils)`);

function quote(word: string): string {
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

function lastMessage(body: unknown): string {
  return String((body as { messages: { content: unknown }[] }).messages.at(-1)?.content);
}

describe('approvals at the terminal', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const children: ChildProcessWithoutNullStreams[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function setUp(
    policy: Record<string, unknown> = {},
  ): Promise<{ env: Record<string, string>; workspace: string }> {
    sandbox = await makeSandbox({
      policy: { rules: [{ tool: 'shell', command: 'cargo tree', decision: 'ask' }], ...policy },
      specialists: {
        rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
      },
    });
    llm = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [TREE, FINISH],
    });
    return { env: testEnv(sandbox, llm.url), workspace: await exampleCrate() };
  }

  /** `fabric run` of the rust specialist on the workspace, with the given flags. */
  function runArgs(workspace: string, ...flags: string[]): string[] {
    return [
      'run',
      '-s',
      'rust',
      '--workspace',
      workspace,
      ...flags,
      '--config',
      sandbox!.configPath,
      'Show the tree',
    ];
  }

  /** `fabric run` in a pseudo-terminal: what it printed so far, the keys to type, and its exit code. */
  function inTerminal(env: Record<string, string>, workspace: string) {
    const command = [process.execPath, SOURCE_CLI, ...runArgs(workspace)].map(quote).join(' ');
    const child = spawn(SCRIPT, ['-qfec', command, '/dev/null'], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        TERM: 'xterm',
        ...env,
      },
      cwd: sandbox!.dir,
    });
    children.push(child);
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { output: () => output, type: (keys: string) => child.stdin.write(keys), exit };
  }

  it.skipIf(noScript)(
    'prompts with the argv and the patterns; y runs the command in the sandbox',
    async () => {
      const { env, workspace } = await setUp();
      const term = inTerminal(env, workspace);
      await vi.waitFor(() => expect(term.output()).toContain('[y] approve once'), PATIENCE);
      expect(term.output()).toContain('`cargo tree -e features` needs your answer');
      expect(term.output()).toContain('pattern 1: cargo tree <any arguments>');
      term.type('y');
      expect(await term.exit).toBe(0);
      const read = lastMessage(llm!.chatRequests()[1]!.body);
      expect(read).toContain('compositor-core v0.1.0');
      const [runId = ''] = (await readdir(sandbox!.runsDir)).filter((name) => !name.startsWith('.'));
      const events = await new KilledRuns(sandbox!, env).events(runId);
      expect(events.find((event) => event.kind === 'approval_decided')).toMatchObject({
        state: 'approved',
        channel: 'terminal',
        scope: 'once',
      });
    },
    120_000,
  );

  it.skipIf(noScript)(
    'm denies with a message the model reads; the command never runs',
    async () => {
      const { env, workspace } = await setUp();
      const term = inTerminal(env, workspace);
      await vi.waitFor(() => expect(term.output()).toContain('[m] deny with a message'), PATIENCE);
      term.type('m');
      await vi.waitFor(() => expect(term.output()).toContain('deny with a message to the model'), PATIENCE);
      term.type('look in damage.rs instead\r');
      expect(await term.exit).toBe(0);
      const read = lastMessage(llm!.chatRequests()[1]!.body);
      expect(read).toContain('Not run: a person denied');
      expect(read).toContain('look in damage.rs instead');
    },
    120_000,
  );

  it.skipIf(noScript)(
    'Ctrl-C at the prompt cancels the run (exit 130) and the approval ends cancelled',
    async () => {
      const { env, workspace } = await setUp();
      const term = inTerminal(env, workspace);
      await vi.waitFor(() => expect(term.output()).toContain('[y] approve once'), PATIENCE);
      term.type('\x03');
      expect(await term.exit).toBe(130);
      const [runId = ''] = (await readdir(sandbox!.runsDir)).filter((name) => !name.startsWith('.'));
      const events = await new KilledRuns(sandbox!, env).events(runId);
      expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
      const listed = await runFabricInProcess(
        ['approvals', 'list', '--state', 'all', '--json', '--config', sandbox!.configPath],
        {
          env,
          cwd: sandbox!.dir,
        },
      );
      expect(JSON.parse(listed.stdout)).toMatchObject([{ state: 'cancelled' }]);
      expect(llm!.chatRequests()).toHaveLength(1);
    },
    120_000,
  );

  it('without a terminal the call is refused at once: fabric run ends by itself', async () => {
    const { env, workspace } = await setUp();
    const done = await spawnFabric(runArgs(workspace, '--json'), { env, cwd: sandbox!.dir });
    expect(done.exitCode, done.stderr).toBe(0);
    expect(lastMessage(llm!.chatRequests()[1]!.body)).toContain('nobody can be asked in this run');
  }, 120_000);

  it('--on-approval wait without a terminal waits for fabric approvals answer from another terminal', async () => {
    const { env, workspace } = await setUp();
    const child = spawnFabric(runArgs(workspace, '--on-approval', 'wait', '--json'), {
      env,
      cwd: sandbox!.dir,
    });
    let id = '';
    await vi.waitFor(async () => {
      const listed = await runFabricInProcess(
        ['approvals', 'list', '--json', '--config', sandbox!.configPath],
        {
          env,
          cwd: sandbox!.dir,
        },
      );
      id = (JSON.parse(listed.stdout) as { id: string }[])[0]?.id ?? '';
      expect(id).not.toBe('');
    }, PATIENCE);
    expect(llm!.chatRequests()).toHaveLength(1);
    const answered = await runFabricInProcess(
      ['approvals', 'answer', id, 'approve', '--config', sandbox!.configPath],
      {
        env,
        cwd: sandbox!.dir,
      },
    );
    expect(answered.stdout).toContain('reads the answer and goes on');
    const done = await child;
    expect(done.exitCode, done.stderr).toBe(0);
    expect(lastMessage(llm!.chatRequests()[1]!.body)).toContain('compositor-core v0.1.0');
  }, 120_000);

  it('--on-approval wait: an approval nobody answers expires, the model is told it is not a refusal, and the run goes on', async () => {
    const { env, workspace } = await setUp({ approval_timeout_s: 1 });
    const done = await spawnFabric(runArgs(workspace, '--on-approval', 'wait', '--json'), {
      env,
      cwd: sandbox!.dir,
    });
    expect(done.exitCode, done.stderr).toBe(0);
    const run = JSON.parse(done.stdout) as { status: string; runlog: string };
    expect(run.status).toBe('succeeded');
    const told = lastMessage(llm!.chatRequests()[1]!.body);
    expect(told).toContain("Not run: `cargo tree -e features` needs a person's approval");
    expect(told).toContain('nobody answered before it expired');
    expect(told).toContain('This is not a refusal');
    expect(told).not.toMatch(/denied/i);
    const { events } = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog);
    const decided = events.find((event) => event.kind === 'approval_decided');
    expect(decided).toMatchObject({ state: 'expired', channel: 'timeout', scope: 'once' });
    expect(events.filter((event) => event.kind === 'tool_started' && event.tool === 'shell')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
    const listed = await runFabricInProcess(
      ['approvals', 'list', '--state', 'expired', '--json', '--config', sandbox!.configPath],
      { env, cwd: sandbox!.dir },
    );
    expect(listed.exitCode, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([
      { argv: ['cargo', 'tree', '-e', 'features'], state: 'expired', answer: { channel: 'timeout' } },
    ]);
    expect(llm!.chatRequests()).toHaveLength(2);
  }, 120_000);
});

import { readFile, readdir, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import {
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { exampleCrate } from '../../support/rust-run.ts';

const MODEL = 'qwen/qwen3-coder-30b';
// Waiting for another process to get somewhere, not a measure of speed.
const PATIENCE = { timeout: 120_000, interval: 50 };
const OLD = '//! The core of a compositor, without the protocol and the GPU';
const NEW = '//! The core of a compositor (resumable), without the protocol and the GPU';
const EDIT = {
  name: 'edit_file',
  arguments: { path: 'src/lib.rs', old_text: OLD, new_text: NEW },
  id: 'call_edit',
};
const FINISH: ScriptedTurn = {
  reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Edited the crate doc.' } }] },
};

describe('fabric resume of a rust run killed mid-step', () => {
  let llm: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
    await llm?.stop();
    await sandbox?.cleanup();
  });

  async function setUp(script: ScriptedTurn[]) {
    sandbox = await makeSandbox({
      specialists: {
        rust: {
          builder: 'builtin:rust',
          sandbox: { allowed_commands: ['cargo check', 'sleep'], timeout_s: 600 },
        },
      },
    });
    llm = await startFakeLlmServer({ flavor: 'lm_studio', models: [{ id: MODEL, toolUse: true }], script });
    const workspace = await exampleCrate();
    return { workspace, env: testEnv(sandbox, llm.url) };
  }

  /** Starts `fabric run -s rust` as a real process and kills it once `ready` holds of its runlog. */
  async function killWhen(
    workspace: string,
    env: Record<string, string>,
    ready: (events: RunEvent[]) => boolean,
  ) {
    if (!sandbox) throw new Error('no sandbox');
    const box = sandbox;
    const child = spawnFabric(
      ['run', '--config', box.configPath, '-s', 'rust', '--workspace', workspace, 'Edit the crate doc'],
      { env, cwd: box.dir },
    );
    cleanups.push(async () => {
      child.kill('SIGKILL');
      await child;
    });
    let runId = '';
    await vi.waitFor(async () => {
      [runId = ''] = (await readdir(box.runsDir).catch(() => [])).filter((name) => !name.startsWith('.'));
      expect(ready(await events(runId))).toBe(true);
    }, PATIENCE);
    child.kill('SIGKILL');
    expect((await child).signal).toBe('SIGKILL');
    return runId;
  }

  function logPath(runId: string): string {
    if (!sandbox) throw new Error('no sandbox');
    return join(sandbox.runsDir, runId, 'runlog.jsonl');
  }

  async function events(runId: string): Promise<RunEvent[]> {
    if (runId === '') return [];
    const text = await readFile(logPath(runId), 'utf8').catch(() => '');
    return text === '' ? [] : parseRunlog(text, logPath(runId)).events;
  }

  async function resume(runId: string, env: Record<string, string>) {
    if (!sandbox) throw new Error('no sandbox');
    const out = await runFabricInProcess(['resume', runId, '--json', '--config', sandbox.configPath], {
      env,
      cwd: sandbox.dir,
    });
    expect(out.exitCode, out.stderr).toBe(0);
    return JSON.parse(out.stdout) as RunResult;
  }

  function messagesOf(index: number): { role: string; content: string }[] {
    const body = llm?.chatRequests()[index]?.body as
      | { messages?: { role: string; content: string }[] }
      | undefined;
    return body?.messages ?? [];
  }

  it('never runs again a command that was running when the process died, and tells the model what is known', async () => {
    const { workspace, env } = await setUp([
      {
        reply: {
          toolCalls: [EDIT, { name: 'shell', arguments: { command: 'sleep 600' }, id: 'call_sleep' }],
        },
      },
      FINISH,
    ]);
    const runId = await killWhen(workspace, env, (log) =>
      log.some((event) => event.kind === 'tool_started' && event.tool === 'shell'),
    );
    const killed = await events(runId);
    expect(killed.find((event) => event.kind === 'tool_started' && event.tool === 'shell')).toMatchObject({
      effect: 'external',
      args_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });

    const result = await resume(runId, env);
    expect(result).toMatchObject({ run_id: runId, status: 'succeeded' });
    const log = await events(runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      previous_status: 'interrupted',
      in_flight: [{ call_id: 'call_sleep', tool: 'shell', effect: 'external', action: 'unknown' }],
      turn_asked_again: false,
    });
    // The command ran once, the edit was made once.
    expect(log.filter((event) => event.kind === 'tool_started' && event.tool === 'shell')).toHaveLength(1);
    const text = await readFile(join(workspace, 'src/lib.rs'), 'utf8');
    expect(text.split(NEW)).toHaveLength(2);
    // Two model turns were asked, each once; the second request goes on from the first as it was sent.
    expect(llm?.chatRequests()).toHaveLength(2);
    const first = messagesOf(0);
    const second = messagesOf(1);
    expect(JSON.stringify(second.slice(0, first.length))).toBe(JSON.stringify(first));
    expect(second.at(-1)).toMatchObject({ role: 'tool' });
    expect(second.at(-1)?.content).toContain(
      'It may or may not have taken effect, and it was not run again.',
    );
    expect(second.at(-1)?.content).toContain('src/lib.rs');
  });

  it.each([
    ['already in the file: recorded as verified, not applied again', true, 'verified'],
    ['not in the file: made, once', false, 'rerun'],
  ] as const)('settles an edit_file that started and has no result, %s', async (_name, applied, action) => {
    const { workspace, env } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, env, () => (llm?.chatRequests().length ?? 0) === 2);
    // The runlog as a kill between tool_started and tool_result leaves it: the lines after the marker gone.
    const text = await readFile(logPath(runId), 'utf8');
    const lines = text.split('\n');
    const marker = lines.findIndex((line) => line.includes('"kind":"tool_started"'));
    await truncate(logPath(runId), Buffer.byteLength(`${lines.slice(0, marker + 1).join('\n')}\n`));
    if (!applied) {
      const source = await readFile(join(workspace, 'src/lib.rs'), 'utf8');
      await writeFile(join(workspace, 'src/lib.rs'), source.replace(NEW, OLD));
    }

    const result = await resume(runId, env);
    expect(result).toMatchObject({ run_id: runId, status: 'succeeded' });
    const log = await events(runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      in_flight: [{ call_id: 'call_edit', tool: 'edit_file', effect: 'transform', action }],
      // The edit in flight changed the file since the step before it, when it was made.
      drift: applied ? ['src/lib.rs'] : [],
    });
    const source = await readFile(join(workspace, 'src/lib.rs'), 'utf8');
    expect(source.split(NEW)).toHaveLength(2);
    expect(source).not.toContain(OLD);
    const settled = log.filter((event) => event.kind === 'tool_result' && event.call_id === 'call_edit');
    expect(settled).toEqual([
      expect.objectContaining(applied ? { resumed: 'verified' } : { tool: 'edit_file' }),
    ]);
    if (!applied) expect(settled[0]).not.toHaveProperty('resumed');
  });

  it('tells the model which files a person changed while the run was stopped, and records them', async () => {
    const { workspace, env } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, env, () => (llm?.chatRequests().length ?? 0) === 2);
    const geometry = join(workspace, 'src/geometry.rs');
    await writeFile(geometry, `${await readFile(geometry, 'utf8')}\n// a person was here\n`);

    expect(await resume(runId, env)).toMatchObject({ run_id: runId, status: 'succeeded' });
    const log = await events(runId);
    expect(log.find((event) => event.kind === 'run_resumed')).toMatchObject({
      drift: ['src/geometry.rs'],
      in_flight: [],
      turn_asked_again: true,
    });
    const before = messagesOf(1);
    const after = messagesOf(2);
    expect(JSON.stringify(after.slice(0, before.length))).toBe(JSON.stringify(before));
    expect(after.at(-1)).toMatchObject({ role: 'user' });
    expect(after.at(-1)?.content).toContain('changed by someone else: src/geometry.rs');
  });

  it('refuses a run whose config changed unless --force, and one whose workspace is gone', async () => {
    const { workspace, env } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, env, () => (llm?.chatRequests().length ?? 0) === 2);
    if (!sandbox) throw new Error('no sandbox');
    const box = sandbox;
    const config = await readFile(box.configPath, 'utf8');
    await writeFile(box.configPath, `${config}loop:\n  max_steps: 12\n`);
    const changed = await runFabricInProcess(['resume', runId, '--config', box.configPath], {
      env,
      cwd: box.dir,
    });
    expect(changed.exitCode).toBe(2);
    expect(changed.stderr).toContain('the config changed since it started');
    expect(changed.stderr).toContain('--force');
    expect((await events(runId)).map((event) => event.kind)).not.toContain('run_resumed');

    await rm(workspace, { recursive: true, force: true });
    const gone = await runFabricInProcess(['resume', runId, '--force', '--config', box.configPath], {
      env,
      cwd: box.dir,
    });
    expect(gone.exitCode).toBe(2);
    expect(gone.stderr).toContain(`its workspace ${workspace} is gone`);
    expect((await events(runId)).map((event) => event.kind)).not.toContain('run_resumed');
  });
});

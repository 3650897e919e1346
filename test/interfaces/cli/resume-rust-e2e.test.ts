import { readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { KilledRuns, sentMessages } from '../../support/killed-run.ts';
import { exampleCrate } from '../../support/rust-run.ts';

const MODEL = 'qwen/qwen3-coder-30b';
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
  let runs: KilledRuns | undefined;
  afterEach(async () => {
    await runs?.stop();
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
    runs = new KilledRuns(sandbox, testEnv(sandbox, llm.url));
    return { workspace, runs };
  }

  /** Starts `fabric run -s rust` as a real process and kills it once `ready` holds of its runlog. */
  function killWhen(workspace: string, ready: (events: RunEvent[]) => boolean) {
    if (!runs) throw new Error('no set-up');
    return runs.killWhen(['-s', 'rust', '--workspace', workspace, 'Edit the crate doc'], ready);
  }

  function logPath(runId: string): string {
    return runs?.logPath(runId) ?? '';
  }

  async function events(runId: string): Promise<RunEvent[]> {
    return runs?.events(runId) ?? [];
  }

  async function resume(runId: string) {
    const out = await runs?.resume([runId, '--json']);
    expect(out?.exitCode, out?.stderr).toBe(0);
    return JSON.parse(out?.stdout ?? '') as RunResult;
  }

  function messagesOf(index: number): { role: string; content: string }[] {
    return sentMessages(llm, index);
  }

  it('never runs again a command that was running when the process died, and tells the model what is known', async () => {
    const { workspace } = await setUp([
      {
        reply: {
          toolCalls: [EDIT, { name: 'shell', arguments: { command: 'sleep 600' }, id: 'call_sleep' }],
        },
      },
      FINISH,
    ]);
    const runId = await killWhen(workspace, (log) =>
      log.some((event) => event.kind === 'tool_started' && event.tool === 'shell'),
    );
    const killed = await events(runId);
    expect(killed.find((event) => event.kind === 'tool_started' && event.tool === 'shell')).toMatchObject({
      effect: 'external',
      args_digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/),
    });

    const result = await resume(runId);
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
    const { workspace } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, () => (llm?.chatRequests().length ?? 0) === 2);
    // The runlog as a kill between tool_started and tool_result leaves it: the lines after the marker gone.
    const text = await readFile(logPath(runId), 'utf8');
    const lines = text.split('\n');
    const marker = lines.findIndex((line) => line.includes('"kind":"tool_started"'));
    await truncate(logPath(runId), Buffer.byteLength(`${lines.slice(0, marker + 1).join('\n')}\n`));
    if (!applied) {
      const source = await readFile(join(workspace, 'src/lib.rs'), 'utf8');
      await writeFile(join(workspace, 'src/lib.rs'), source.replace(NEW, OLD));
    }

    const result = await resume(runId);
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
    const { workspace } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, () => (llm?.chatRequests().length ?? 0) === 2);
    const geometry = join(workspace, 'src/geometry.rs');
    await writeFile(geometry, `${await readFile(geometry, 'utf8')}\n// a person was here\n`);

    expect(await resume(runId)).toMatchObject({ run_id: runId, status: 'succeeded' });
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
    const { workspace, runs } = await setUp([{ reply: { toolCalls: [EDIT] } }, { hang: true }, FINISH]);
    const runId = await killWhen(workspace, () => (llm?.chatRequests().length ?? 0) === 2);
    const config = await readFile(runs.sandbox.configPath, 'utf8');
    await writeFile(runs.sandbox.configPath, `${config}loop:\n  max_steps: 12\n`);
    const changed = await runs.resume([runId]);
    expect(changed.exitCode).toBe(2);
    expect(changed.stderr).toContain('the config changed since it started');
    expect(changed.stderr).toContain('--force');
    expect((await events(runId)).map((event) => event.kind)).not.toContain('run_resumed');

    await rm(workspace, { recursive: true, force: true });
    const gone = await runs.resume([runId, '--force']);
    expect(gone.exitCode).toBe(2);
    expect(gone.stderr).toContain(`its workspace ${workspace} is gone`);
    expect((await events(runId)).map((event) => event.kind)).not.toContain('run_resumed');
  });
});

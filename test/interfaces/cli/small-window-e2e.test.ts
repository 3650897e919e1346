import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { exampleCrate, runRust, rustSandbox } from '../../support/rust-run.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/**
 * SPEC §17 / issue 23: a 40-step rust run whose reads and cargo outputs total several times an 8k
 * window completes on a model loaded at 8k, the fake refusing (as LM Studio does) any request over
 * the window; and replay reproduces its compactions.
 */
const WINDOW = 8192;
const FILES = 30;
const file = (n: number) =>
  Array.from({ length: 70 }, (_, i) => `// notes ${n}.${i}: damage tracking per output, region ${i}`).join(
    '\n',
  );
/** Thinking out loud with each call: text that stubs cannot shorten, so a summary is needed. */
const musing = (n: number) =>
  `Step ${n}. ${'I keep track of which outputs were damaged and which regions still need a repaint. '.repeat(4)}`;

/** 30 reads with a cargo check after every fourth, then finish: 37 working steps and the finish. */
function script(): ScriptedTurn[] {
  const turns: ScriptedTurn[] = [];
  for (let n = 1; n <= FILES; n += 1) {
    turns.push({
      reply: {
        content: musing(n),
        toolCalls: [{ name: 'read_file', arguments: { path: `notes-${n}.txt` } }],
      },
    });
    if (n % 4 === 0) turns.push({ reply: { toolCalls: [{ name: 'cargo_check', arguments: {} }] } });
  }
  turns.push({
    reply: {
      toolCalls: [
        {
          name: 'finish_task',
          arguments: { summary: 'Read them all.', artifacts: [], next_steps: [], notes: '' },
        },
      ],
    },
  });
  return turns;
}

describe('a long run in a small window', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it('compacts, summarises when stubs are not enough, keeps every request within the window, and replays the same', async () => {
    workspace = await exampleCrate();
    for (let n = 1; n <= FILES; n += 1) await writeFile(join(workspace, `notes-${n}.txt`), file(n));
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: WINDOW, enforceWindow: true }],
      // A request without tools is the summarising turn.
      respond: ({ tools }) =>
        tools.length === 0
          ? { reply: { content: 'I read the notes up to here; the rest are left.' } }
          : undefined,
      script: script(),
    });
    sandbox = await rustSandbox({ loop: { max_steps: 45 } });
    const env = testEnv(sandbox, server.url);
    const { run, events, stderr } = await runRust(sandbox, workspace, env, 'Read the notes');
    expect(run.status, stderr).toBe('succeeded');
    expect(run.steps).toBe(38);
    const compactions = events.filter((event) => event.kind === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    // In chunks: each one stubs results enough to last a few steps, so there are far fewer than steps.
    expect(compactions.length).toBeLessThanOrEqual(run.steps / 2);
    for (const compaction of compactions) expect(compaction.tokens_after).toBeLessThan(WINDOW * 0.8 - 1024);
    // The model's own text cannot be stubbed: at least once its summary replaced the middle.
    const summarised = compactions.filter((compaction) => (compaction.summarised ?? 0) > 0);
    expect(summarised.length).toBeGreaterThan(0);
    const requests = server
      .chatRequests()
      .map((request) => request.body as { tools?: unknown[]; messages: { role: string; content: string }[] });
    const asks = requests.filter((body) => (body.tools ?? []).length === 0);
    expect(asks).toHaveLength(summarised.length);
    expect(asks[0]!.messages.at(-1)!.content).toMatch(
      /^Your conversation no longer fits your context window/,
    );
    // Without tools means none sent: OpenAI's API refuses an empty list.
    expect(asks[0]).not.toHaveProperty('tools');
    // The summary goes on as the model's own turn, the task before it untouched.
    const after = requests[requests.indexOf(asks[0]!) + 1]!;
    expect(after.messages[1]!.content).toBe('Read the notes');
    expect(after.messages[2]).toMatchObject({
      role: 'assistant',
      content: expect.stringContaining('I read the notes up to here'),
    });
    // The reads and cargo outputs together are several times the window; every request fitted
    // (the fake refuses one that does not).
    const results = events.filter((event) => event.kind === 'tool_result');
    expect(results.filter((event) => event.tool === 'cargo_check')).toHaveLength(7);
    const total = Array.from({ length: FILES }, (_, i) => file(i + 1).length).reduce((a, b) => a + b, 0);
    expect(total / 4).toBeGreaterThan(WINDOW * 3);
    expect(stderr).toMatch(/⇣ compacted: \d+ old tool results? stubbed/);
    expect(stderr).toMatch(/⇣ compacted: .*\d+ earlier messages summarised/);

    // Replay answers from the recorded turns, the summary included, and compacts the same.
    const replayed = await runFabricInProcess(
      ['replay', run.run_id, '--execute', '--json', '--workspace', workspace, '--config', sandbox.configPath],
      { env, cwd: sandbox.dir },
    );
    expect(JSON.parse(replayed.stdout), replayed.stderr).toMatchObject({ identical: true, differences: [] });
  });

  it('keeps within the window on its own estimate when the server reports zero usage', async () => {
    workspace = await exampleCrate();
    for (let n = 1; n <= FILES; n += 1) await writeFile(join(workspace, `notes-${n}.txt`), file(n));
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      zeroUsage: true,
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: WINDOW, enforceWindow: true }],
      respond: ({ tools }) => (tools.length === 0 ? { reply: { content: 'Summary.' } } : undefined),
      script: script(),
    });
    sandbox = await rustSandbox({ loop: { max_steps: 45 } });
    const { run, events, stderr } = await runRust(
      sandbox,
      workspace,
      testEnv(sandbox, server.url),
      'Read the notes',
    );
    expect(run.status, stderr).toBe('succeeded');
    expect(run.steps).toBe(38);
    const usage = events.flatMap((event) =>
      event.kind === 'llm_response' ? [event.usage.prompt_tokens] : [],
    );
    expect(new Set(usage)).toEqual(new Set([0]));
    expect(events.filter((event) => event.kind === 'compaction').length).toBeGreaterThan(0);
  });

  it('fails at once with context_too_small when the window cannot hold the prompt, the tools and one result', async () => {
    workspace = await exampleCrate();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: 2048, enforceWindow: true }],
    });
    sandbox = await rustSandbox();
    const { run, events, exitCode } = await runRust(
      sandbox,
      workspace,
      testEnv(sandbox, server.url),
      'Fix it',
    );
    expect(run.status).toBe('failed');
    expect(run.error?.code).toBe('context_too_small');
    expect(exitCode).toBe(4);
    // It names the window, what the run needs and the fix.
    expect(run.error?.message).toMatch(
      /context window is 2048 tokens.*needs at least about \d+.*llm\.context_length/s,
    );
    // Nothing was asked of the model.
    expect(server.chatRequests()).toHaveLength(0);
    expect(events.map((event) => event.kind)).toEqual(['run_start', 'run_end']);
  });
});

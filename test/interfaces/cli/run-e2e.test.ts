import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_KINDS, CONVERSION_SCRIPT } from '../../support/scripts.ts';

const MODEL = 'qwen/qwen3-coder-30b';

async function readEvents(path: string): Promise<RunEvent[]> {
  return parseRunlog(await readFile(path, 'utf8'), path).events;
}

describe('fabric run, end to end against the fake LM Studio', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;

  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  it('rejects a finish_task without a required field, lets the model retry, and succeeds', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const result = await spawnFabric(
      ['run', '--specialist', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km to miles'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(result.stderr).toContain('finish_task rejected');
    expect(result.exitCode).toBe(0);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('succeeded');
    expect(run.payload).toEqual({ summary: 'Converted 3 km.', answer: '1.864114 mi' });
    expect(run.model).toBe(MODEL);
    expect(run.steps).toBe(3);

    const events = await readEvents(run.runlog);
    expect(events.map((event) => event.seq)).toEqual(events.map((_, index) => index + 1));
    const kinds = events.map((event) => event.kind);
    expect(kinds).toEqual(CONVERSION_KINDS);
    for (const event of events) {
      expect(event.run_id).toBe(run.run_id);
      expect(Number.isNaN(Date.parse(event.ts))).toBe(false);
    }
    const end = events.at(-1);
    if (end?.kind !== 'run_end') throw new Error('no run_end');
    // --json output and the runlog tell the same story.
    expect(end.status).toBe(run.status);
    expect(end.payload).toEqual(run.payload);
    expect(end.steps).toBe(run.steps);
    expect(end.usage).toEqual(run.usage);
    expect(run.usage).toEqual({ prompt_tokens: 450, completion_tokens: 36, total_tokens: 486 });
    const rejected = events.find((event) => event.kind === 'finish_rejected');
    expect(rejected?.kind === 'finish_rejected' && rejected.message).toMatch(/"answer" is required/);

    // What the model was sent: the tool result, then the rejection with its reason.
    const bodies = server
      .chatRequests()
      .map((request) => request.body as { messages: { role: string; content: string }[] });
    expect(bodies[1]?.messages.at(-1)).toMatchObject({ role: 'tool', content: '3 km = 1.864114 mi' });
    expect(bodies[2]?.messages.at(-1)?.content).toMatch(/finish_task was not accepted: "answer" is required/);
  });

  it('stops at --max-steps with one last finish-only turn and exits 3', async () => {
    const convert = {
      reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'm', to: 'cm' } }] },
    };
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        convert,
        convert,
        {
          reply: {
            toolCalls: [
              { name: 'finish_task', arguments: { summary: 'Ran out of steps.', answer: '100 cm' } },
            ],
          },
        },
      ],
    });
    const result = await spawnFabric(
      ['run', '-s', 'units', '--json', '--max-steps', '2', '--config', sandbox.configPath, 'Convert 1 m'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(result.exitCode).toBe(3);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('max_steps');
    expect(run.payload).toEqual({ summary: 'Ran out of steps.', answer: '100 cm' });
    const final = server.chatRequests()[2]?.body as {
      tools: { function: { name: string } }[];
      messages: { content: string }[];
    };
    // The final turn keeps the tool list, so the server's cached prefix serves it (SPEC §17).
    expect(final.tools.map((tool) => tool.function.name)).toEqual(['convert_units', 'finish_task']);
    expect(final.messages.at(-1)?.content).toMatch(/step limit of 2/);
    const events = await readEvents(run.runlog);
    const requests = events.filter((event) => event.kind === 'llm_request');
    expect(requests.map((event) => event.kind === 'llm_request' && event.final_turn)).toEqual([
      false,
      false,
      true,
    ]);
  });

  it('ends the run cancelled on Ctrl-C, with run_end in the runlog', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL }],
      script: [{ hang: true }],
    });
    const child = spawnFabric(
      ['run', '-s', 'units', '--json', '--config', sandbox.configPath, 'Convert 1 m'],
      {
        env: testEnv(sandbox, server.url),
        cwd: sandbox.dir,
      },
    );
    // Wait until the request is in flight, then interrupt.
    for (let i = 0; i < 200 && server.chatRequests().length === 0; i += 1)
      await new Promise((r) => setTimeout(r, 25));
    expect(server.chatRequests()).toHaveLength(1);
    child.kill('SIGINT');
    const result = await child;
    expect(result.exitCode).toBe(130);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('cancelled');
    const events = await readEvents(run.runlog);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'cancelled' });
  });
});

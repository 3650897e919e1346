import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, runFabricInProcess, testEnv } from '../../support/fabric-cli.ts';
import { exampleCrate, runRust, rustSandbox } from '../../support/rust-run.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { createApp } from '../../../src/interfaces/http/app.ts';
import { makeFabric } from '../http/http-harness.ts';

/**
 * SPEC §17: a tool result larger than its share of the window is cut to a head and a tail, kept
 * whole with the run, and read on with read_output, offered once something was cut.
 */
const WINDOW = 8192;
const BUDGET = (WINDOW / 4) * 3; // a quarter of the window, at 3 characters a token
const BIG = Array.from(
  { length: 4000 },
  (_, i) => `line ${i + 1}: the compositor keeps damage per output`,
).join('\n');

describe('a rust run whose one result is many times the window', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it('gets the head and tail, a marker, and pages through the kept output', async () => {
    workspace = await exampleCrate();
    await writeFile(join(workspace, 'BIG.txt'), BIG);
    const head = Math.floor(BUDGET * 0.6);
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: WINDOW }],
      script: [
        { reply: { toolCalls: [{ id: 'call_big', name: 'read_file', arguments: { path: 'BIG.txt' } }] } },
        { reply: { toolCalls: [{ name: 'read_output', arguments: { call_id: 'call_big', offset: head } }] } },
        {
          reply: {
            toolCalls: [
              {
                name: 'finish_task',
                arguments: { summary: 'Read it.', artifacts: [], next_steps: [], notes: '' },
              },
            ],
          },
        },
      ],
    });
    sandbox = await rustSandbox();
    const { run, events, stderr } = await runRust(
      sandbox,
      workspace,
      testEnv(sandbox, server.url),
      'Read BIG.txt',
    );
    expect(run.status, stderr).toBe('succeeded');
    const results = events.filter((event) => event.kind === 'tool_result');
    const read = results.find((event) => event.tool === 'read_file');
    expect(read?.kept).toMatchObject({ chars: expect.any(Number) });
    expect(read?.kept?.location).toContain(join(run.run_id, 'outputs', 'call_big.txt'));
    expect(await readFile(read!.kept!.location, 'utf8')).toContain(BIG);
    expect(read!.result.length).toBeLessThan(BUDGET + 400);
    expect(read!.result).toContain(`call read_output with {"call_id": "call_big", "offset": ${head}}`);
    expect(read!.result).toContain('line 4000: the compositor');
    const page = results.find((event) => event.tool === 'read_output');
    expect(page?.result).toMatch(
      new RegExp(
        `^\\[characters ${head}–${head + BUDGET} of \\d+; next: call read_output with "offset": ${head + BUDGET}\\.\\]`,
      ),
    );
    // Offered once something was cut, not before.
    const offered = server
      .chatRequests()
      .map((request) =>
        (request.body as { tools: { function: { name: string } }[] }).tools.map((tool) => tool.function.name),
      );
    expect(offered[0]).not.toContain('read_output');
    expect(offered[1]).toContain('read_output');
    expect(events[0]).toMatchObject({ kind: 'run_start', window_tokens: WINDOW });
    // Replayed, the result is cut to the same window and paged the same way: no differences.
    const replay = await runFabricInProcess(
      ['replay', run.run_id, '--execute', '--config', sandbox.configPath],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(replay.stdout, replay.stderr).toContain('no differences');
    // The viewer links the whole output, and serves it as text.
    const fabric = await makeFabric(sandbox, server.url);
    try {
      const app = createApp({ fabric, requireToken: false });
      const page = await (await app.request(`/runs/${run.run_id}`)).text();
      expect(page).toContain(`<a href="/runs/${run.run_id}/outputs/call_big">the whole output</a>`);
      const whole = await app.request(`/runs/${run.run_id}/outputs/call_big`);
      expect(whole.headers.get('content-type')).toMatch(/text\/plain/);
      expect(await whole.text()).toContain(BIG);
      expect((await app.request(`/runs/${run.run_id}/outputs/..%2F..%2Ffabric.yaml`)).status).toBe(404);
    } finally {
      await fabric.close();
    }
    // No request carries a result over the budget.
    for (const request of server.chatRequests()) {
      const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
      for (const message of messages.filter((m) => m.role === 'tool'))
        expect(message.content.length).toBeLessThan(BUDGET + 400);
    }
  });
});

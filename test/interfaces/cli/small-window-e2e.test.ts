import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, testEnv } from '../../support/fabric-cli.ts';
import { exampleCrate, runRust, rustSandbox } from '../../support/rust-run.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/**
 * SPEC §17 / issue 23: a long rust run whose reads total several times an 8k window completes on
 * a model loaded at 8k, the fake refusing (as LM Studio does) any request over the window.
 */
const WINDOW = 8192;
const FILES = 34;
const file = (n: number) =>
  Array.from({ length: 60 }, (_, i) => `// notes ${n}.${i}: damage tracking per output, region ${i}`).join(
    '\n',
  );

describe('a long run in a small window', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it('compacts the oldest results and keeps every request within the window', async () => {
    workspace = await exampleCrate();
    for (let n = 1; n <= FILES; n += 1) await writeFile(join(workspace, `notes-${n}.txt`), file(n));
    const reads: ScriptedTurn[] = Array.from({ length: FILES }, (_, i) => ({
      reply: { toolCalls: [{ name: 'read_file', arguments: { path: `notes-${i + 1}.txt` } }] },
    }));
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      lmStudioV1Api: true,
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true, contextLength: WINDOW, enforceWindow: true }],
      script: [
        ...reads,
        {
          reply: {
            toolCalls: [
              {
                name: 'finish_task',
                arguments: { summary: 'Read them all.', artifacts: [], next_steps: [], notes: '' },
              },
            ],
          },
        },
      ],
    });
    sandbox = await rustSandbox({ loop: { max_steps: 40 } });
    const { run, events, stderr } = await runRust(
      sandbox,
      workspace,
      testEnv(sandbox, server.url),
      'Read the notes',
    );
    expect(run.status, stderr).toBe('succeeded');
    expect(run.steps).toBe(FILES + 1);
    const compactions = events.filter((event) => event.kind === 'compaction');
    expect(compactions.length).toBeGreaterThan(0);
    // Rare: each compaction goes well below the threshold.
    // In chunks: each one stubs results enough to last a few steps, so there are far fewer than steps.
    expect(compactions.length).toBeLessThanOrEqual(FILES / 2);
    for (const compaction of compactions) expect(compaction.tokens_after).toBeLessThan(WINDOW * 0.8 - 1024);
    // The reads together are several times the window; every request fitted (the fake refuses one that does not).
    const total = Array.from({ length: FILES }, (_, i) => file(i + 1).length).reduce((a, b) => a + b, 0);
    expect(total / 4).toBeGreaterThan(WINDOW * 3);
    expect(stderr).toMatch(/⇣ compacted: \d+ old tool results? stubbed/);
  });
});

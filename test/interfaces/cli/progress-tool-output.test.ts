import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/** Issue 34 item 9: a tool's output of several lines keeps its lines in `fabric run`'s progress, bounded. */
describe('fabric run progress of a tool result of several lines', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('shows each line indented under the call, at most eight, and says how many more', async () => {
    sandbox = await makeSandbox({ specialists: { rust: { builder: 'builtin:rust', workspace: '.' } } });
    const text = Array.from({ length: 12 }, (_, i) => `line ${i + 1} of notes`).join('\n');
    await writeFile(join(sandbox.dir, 'notes.txt'), `${text}\n`);
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'notes.txt' } }] } },
        { reply: { content: 'Read the notes.' } },
      ],
    });
    const out = await spawnFabric(['run', '-s', 'rust', '--json', 'Read notes.txt'], {
      env: testEnv(sandbox, server.url, { FABRIC_CONFIG: sandbox.configPath }),
      cwd: sandbox.dir,
    });
    expect(out.stderr).toMatch(/✓ read_file \(\d+ ms\)\n/);
    expect(out.stderr).toMatch(/\n {4}.*line 1 of notes\n {4}.*line 2 of notes\n/);
    expect(out.stderr).toMatch(/line 8 of notes\n {4}… \d+ more lines?\n/);
    expect(out.stderr).not.toContain('line 9 of notes');
  });
});

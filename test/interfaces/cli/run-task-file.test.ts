import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

describe('fabric run --task-file, and a task that is only a path', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
  });
  afterEach(async () => {
    await server.stop();
    await sandbox.cleanup();
  });
  const fabric = (args: string[]) =>
    spawnFabric(['run', '-s', 'units', '--config', sandbox.configPath, ...args], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });

  it("runs the file's content as the task", async () => {
    await mkdir(join(sandbox.dir, 'tasks'));
    await writeFile(join(sandbox.dir, 'tasks', 'convert.md'), '# Convert\n\nConvert 3 km\nto miles.\n');
    const result = await fabric(['--json', '--task-file', 'tasks/convert.md']);
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.status).toBe('succeeded');
    const user = server.chatRequests()[0]?.body as { messages: { role: string; content: string }[] };
    expect(user.messages.find((m) => m.role === 'user')?.content).toContain(
      '# Convert\n\nConvert 3 km\nto miles.',
    );
  });

  it('refuses a task that is the name of an existing file, naming --task-file, before any model is asked', async () => {
    await writeFile(join(sandbox.dir, 'TASK.md'), 'Convert 3 km to miles\n');
    const result = await fabric(['TASK.md']);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('fabric run: The task "TASK.md" is the name of a file');
    expect(result.stderr).toContain('--task-file TASK.md');
    expect(server.chatRequests()).toHaveLength(0);
  });

  it('runs a task that only looks like a path, with a hint on stderr', async () => {
    const result = await fabric(['tasks/missing.md']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stderr).toMatch(
      /the task "tasks\/missing\.md" looks like a file path, but there is no \S+tasks\/missing\.md; it runs as the task's text\. For a task written in a file: --task-file FILE\./,
    );
  });

  it('refuses a missing or empty task file, and a task given twice', async () => {
    const missing = await fabric(['--task-file', 'nope.md']);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/--task-file nope\.md: cannot read \S+nope\.md: it does not exist\./);
    await writeFile(join(sandbox.dir, 'empty.md'), '\n  \n');
    const empty = await fabric(['--task-file', 'empty.md']);
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toMatch(/empty\.md is empty\. Write the task in it\./);
    const twice = await fabric(['--task-file', 'empty.md', 'Convert 3 km']);
    expect(twice.exitCode).toBe(2);
    expect(twice.stderr).toContain('takes the task once');
    expect(server.chatRequests()).toHaveLength(0);
  });
});

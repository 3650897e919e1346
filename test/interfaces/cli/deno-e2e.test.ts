import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

describe('fabric run under Deno 2', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox();
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  it('runs the same scripted task from the same sources, to the same runlog', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const result = await spawnFabric(
      ['run', '--specialist', 'units', '--json', '--config', sandbox.configPath, 'Convert 3 km to miles'],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir, runtime: 'deno' },
    );
    expect(result.stderr).toContain('finish_task rejected');
    expect(result.exitCode).toBe(0);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run).toMatchObject({ status: 'succeeded', steps: 3, payload: { answer: '1.864114 mi' } });
    const events = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events;
    expect(events.map((event) => event.kind)).toContain('finish_rejected');
    expect(events.at(-1)).toMatchObject({ kind: 'run_end', status: 'succeeded' });
  });
});

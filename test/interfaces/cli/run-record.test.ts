import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunEvent } from '../../../src/domain/run-events.ts';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

/** Whether the composition root hands the packs the runs directory and config file (issue 12). */

describe('fabric run with the workspace as the working directory and ./runs inside it', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox({ specialists: { rust: { builder: 'builtin:rust', workspace: '.' } } });
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  it('refuses the model its own runlog, the runs directory and the config file, and logs security events', async () => {
    const attempts = [
      { name: 'write_file', arguments: { path: 'runs/forged/runlog.jsonl', content: '{}' } },
      { name: 'read_file', arguments: { path: 'fabric.yaml' } },
      { name: 'write_file', arguments: { path: 'fabric.yaml', content: 'specialists: {}' } },
      { name: 'list_files', arguments: { path: 'runs' } },
    ];
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [{ reply: { toolCalls: attempts } }, { reply: { content: 'I could not touch the record.' } }],
    });
    const before = await readFile(sandbox.configPath, 'utf8');
    const result = await spawnFabric(['run', '-s', 'rust', '--json', 'Rewrite your own runlog'], {
      env: testEnv(sandbox, server.url, { FABRIC_CONFIG: sandbox.configPath }),
      cwd: sandbox.dir,
    });
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run.runlog.startsWith(join(sandbox.dir, 'runs'))).toBe(true);
    const events: RunEvent[] = [...parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events];
    const refusals = events.filter((event) => event.kind === 'security_event');
    expect(refusals.map((event) => event.kind === 'security_event' && event.rule)).toEqual([
      'run_record',
      'protected_file',
      'protected_file',
      'run_record',
    ]);
    expect(events.filter((event) => event.kind === 'tool_result')).toEqual([]);
    expect(events.at(-1)).toMatchObject({ kind: 'run_end' });
    expect(await readFile(sandbox.configPath, 'utf8')).toBe(before);
  });
});

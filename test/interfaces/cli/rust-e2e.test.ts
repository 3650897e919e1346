import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import { parseRunlog } from '../../../src/infrastructure/runlog/parse-runlog.ts';
import { ROOT, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const BROKEN =
  '    pub fn count(&self) -> usize {\n        self.rects.len() as u32\n    }\n\n    pub fn is_empty(&self) -> bool {';

describe('fabric run --specialist rust on the example compositor crate', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  let workspace: string | undefined;
  afterEach(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    if (workspace) await rm(workspace, { recursive: true, force: true });
  });

  it('edits, gets the compile error from cargo_check, is refused at finish until it compiles, then succeeds', async () => {
    workspace = await mkdtemp(join(tmpdir(), 'fabric-ws-'));
    await cp(join(ROOT, 'examples/compositor'), workspace, {
      recursive: true,
      filter: (source) => !source.includes('/target'),
    });
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: 'qwen/qwen3-coder-30b', toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'src/region.rs' } }] } },
        {
          reply: {
            toolCalls: [
              {
                name: 'edit_file',
                arguments: {
                  path: 'src/region.rs',
                  old_text: '    pub fn is_empty(&self) -> bool {',
                  new_text: BROKEN,
                },
              },
            ],
          },
        },
        { reply: { toolCalls: [{ name: 'cargo_check', arguments: {} }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { summary: 'Added Region::count.' } }] } },
        {
          reply: {
            toolCalls: [
              {
                name: 'edit_file',
                arguments: {
                  path: 'src/region.rs',
                  old_text: 'self.rects.len() as u32',
                  new_text: 'self.rects.len()',
                },
              },
            ],
          },
        },
        { reply: { toolCalls: [{ name: 'cargo_check', arguments: {} }] } },
        {
          reply: {
            toolCalls: [
              {
                name: 'finish_task',
                arguments: {
                  summary: 'Added Region::count.',
                  artifacts: ['src/region.rs'],
                  next_steps: [],
                  notes: '',
                },
              },
            ],
          },
        },
      ],
    });
    sandbox = await makeSandbox({
      specialists: {
        rust: {
          builder: 'builtin:rust',
          sandbox: { allowed_commands: ['cargo check', 'cargo test'], timeout_s: 120 },
        },
      },
    });
    const result = await spawnFabric(
      [
        'run',
        '-s',
        'rust',
        '--workspace',
        workspace,
        '--json',
        '--config',
        sandbox.configPath,
        'Add Region::count()',
      ],
      { env: testEnv(sandbox, server.url), cwd: sandbox.dir },
    );
    expect(result.exitCode, result.stderr).toBe(0);
    const run = JSON.parse(result.stdout) as RunResult;
    expect(run).toMatchObject({
      status: 'succeeded',
      steps: 7,
      payload: { summary: 'Added Region::count.' },
    });

    const events = parseRunlog(await readFile(run.runlog, 'utf8'), run.runlog).events;
    // The failing check is a tool error (the model reads the same report), the passing one a result.
    const checks = events.filter(
      (event) =>
        (event.kind === 'tool_result' || event.kind === 'tool_error') && event.tool === 'cargo_check',
    );
    expect(checks.map((event) => event.kind)).toEqual(['tool_error', 'tool_result']);
    expect(checks[0]?.kind === 'tool_error' && checks[0].error).toMatch(/E0308/);
    expect(checks[0]?.kind === 'tool_error' && checks[0].error).toMatch(/src\/region\.rs:\d+/);
    expect(checks[0]).toMatchObject({ reason: 'failed' });
    expect(result.stderr).toMatch(/✗ cargo_check: cargo check failed \(1 error/);
    const rejected = events.filter((event) => event.kind === 'finish_rejected');
    expect(rejected).toHaveLength(1);
    expect(rejected[0]).toMatchObject({ reason: 'gate_failed' });
    expect(rejected[0]?.kind === 'finish_rejected' && rejected[0].message).toMatch(/E0308/);

    // The gate's passing cargo check is visible, not only its failure: in the runlog, the run's
    // progress, `fabric runs show` and the replay timeline.
    const passed = events.filter((event) => event.kind === 'finish_gate_passed');
    expect(passed).toHaveLength(1);
    expect(passed[0]).toMatchObject({ step: 7 });
    expect(passed[0]?.kind === 'finish_gate_passed' && passed[0].message).toMatch(
      /^cargo check passed \(0 errors, \d+ warnings?\)\.$/,
    );
    expect(result.stderr).toMatch(/✓ finish gate: cargo check passed \(0 errors/);
    const cli = (args: string[]) =>
      spawnFabric([...args, '--config', (sandbox as Sandbox).configPath], {
        env: testEnv(sandbox as Sandbox, (server as FakeLlmServer).url),
        cwd: (sandbox as Sandbox).dir,
      });
    const shown = await cli(['runs', 'show', run.run_id]);
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/finish gate: +rejected at step 4: .*cargo check failed \(1 error/);
    expect(shown.stdout).toMatch(/finish gate: +passed at step 7: cargo check passed \(0 errors/);
    const replayed = await cli(['replay', run.run_id]);
    expect(replayed.exitCode, replayed.stderr).toBe(0);
    expect(replayed.stdout).toMatch(/✗ finish_task rejected \(gate_failed\)/);
    expect(replayed.stdout).toMatch(/✓ finish gate: cargo check passed \(0 errors/);

    const source = await readFile(join(workspace, 'src/region.rs'), 'utf8');
    expect(source).toContain('pub fn count(&self) -> usize {\n        self.rects.len()\n    }');
    const check = await execa('cargo', ['check', '--offline', '--quiet'], { cwd: workspace, reject: false });
    expect(check.exitCode, check.stderr).toBe(0);
  });
});

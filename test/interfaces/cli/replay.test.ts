import { appendFile, cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunResult } from '../../../src/domain/run-result.ts';
import {
  ROOT,
  type Sandbox,
  makeSandbox,
  runFabricInProcess,
  spawnFabric,
  testEnv,
} from '../../support/fabric-cli.ts';
import { type FakeLlmServer, startFakeLlmServer } from '../../support/fake-llm-server.ts';
import { CONVERSION_SCRIPT } from '../../support/scripts.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric replay of a units run', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  let run: RunResult;
  const fabric = (args: string[]) =>
    spawnFabric([...args, '--config', sandbox.configPath], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
  // The same CLI in-process, where spawning the binary would add nothing but seconds.
  const inProcess = (args: string[]) =>
    runFabricInProcess([...args, '--config', sandbox.configPath], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });

  beforeAll(async () => {
    sandbox = await makeSandbox();
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: CONVERSION_SCRIPT,
    });
    const result = await fabric(['run', '-s', 'units', '--json', 'Convert 3 km to miles']);
    expect(result.exitCode, result.stderr).toBe(0);
    run = JSON.parse(result.stdout) as RunResult;
  });
  afterAll(async () => {
    await server?.stop();
    await sandbox?.cleanup();
  });

  it('prints the run as a timeline with its steps, the tool results and the rejected finish', async () => {
    const result = await fabric(['replay', run.run_id]);
    expect(result.exitCode, result.stderr).toBe(0);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`run ${run.run_id} · ${run.runlog}`);
    expect(lines[1]).toMatch(
      /^ {3}\+0\.00s {2}run_start {2}units · model qwen\/qwen3-coder-30b \(lm_studio http:\/\/127\.0\.0\.1:\d+\) · Convert 3 km to miles$/,
    );
    expect(result.stdout).toMatch(
      /\+\d+\.\d\ds {2}\[1\] → convert_units \{"value":3,"from":"km","to":"mi"\}/,
    );
    expect(result.stdout).toContain('[1] ✓ 3 km = 1.864114 mi');
    expect(result.stdout).toMatch(/\[2\] ✗ finish_task rejected \(invalid_payload\): "answer" is required/);
    expect(result.stdout).toMatch(/run_end {2}succeeded · 3 steps · 486 tokens/);
    expect(result.stdout).toContain('1 rejected finish,');
    // NO_COLOR is set: no escape codes.
    expect(result.stdout).not.toContain('\u001b[');
  });

  it('prints the timeline as JSON with --json', async () => {
    const result = await inProcess(['replay', run.run_id.slice(0, 20), '--json']);
    expect(result.exitCode, result.stderr).toBe(0);
    const timeline = JSON.parse(result.stdout);
    expect(timeline).toMatchObject({
      run_id: run.run_id,
      runlog: run.runlog,
      torn: false,
      specialist: 'units',
      totals: { status: 'succeeded', steps: 3, tool_calls: 3, finish_rejected: 1 },
    });
    expect(timeline.entries).toHaveLength(13);
    expect(timeline.entries[4]).toMatchObject({ step: 1, kind: 'tool_result', tone: 'ok' });
  });

  it('re-runs the recorded turns with --execute and finds no differences', async () => {
    const result = await fabric(['replay', run.run_id, '--execute']);
    expect(result.exitCode, result.stderr).toBe(0);
    expect(result.stdout).toMatch(
      /^no differences: 3 tool calls answered as in run \S+ \(3 of 3 recorded model turns\); the re-run ended succeeded again\.$/m,
    );
    expect(result.stderr).toContain('finish_task rejected');
    const json = JSON.parse((await inProcess(['replay', run.run_id, '--execute', '--json'])).stdout);
    expect(json).toMatchObject({
      run_id: run.run_id,
      identical: true,
      compared: 3,
      differences: [],
      replay: { status: 'succeeded', steps: 3, events: 13, turns_recorded: 3, turns_used: 3 },
      workspace: { source: null, copy: null, kept: false },
    });
  });

  it('notes a torn last line, and answers 2 for a run that does not exist or a misplaced flag', async () => {
    await appendFile(run.runlog, '{"v":1,"kind":"llm_req');
    const torn = await inProcess(['replay', run.runlog]);
    expect(torn.exitCode).toBe(0);
    expect(torn.stdout).toContain('the runlog ends with a torn line: the process was killed while writing');
    const missing = await inProcess(['replay', 'no-such-run']);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toMatch(/No run "no-such-run"/);
    expect((await inProcess(['replay', run.run_id, '--keep'])).exitCode).toBe(2);
  });
});

describe('fabric replay --execute of a rust run on the example compositor', () => {
  let server: FakeLlmServer | undefined;
  let sandbox: Sandbox | undefined;
  const temps: string[] = [];
  afterAll(async () => {
    await server?.stop();
    await sandbox?.cleanup();
    for (const dir of temps) await rm(dir, { recursive: true, force: true });
  });

  async function compositorCopy(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), 'fabric-ws-'));
    temps.push(dir);
    await cp(join(ROOT, 'examples/compositor'), dir, {
      recursive: true,
      filter: (source) => !source.includes('/target'),
    });
    return dir;
  }

  it('matches on a pristine copy, and reports the step whose tool result changed', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        { reply: { toolCalls: [{ name: 'read_file', arguments: { path: 'src/region.rs' } }] } },
        {
          reply: {
            toolCalls: [
              { name: 'write_file', arguments: { path: 'NOTES.md', content: '# Notes\nRegion is fine.\n' } },
            ],
          },
        },
        { reply: { toolCalls: [{ name: 'cargo_check', arguments: {} }] } },
        {
          reply: {
            toolCalls: [
              { name: 'finish_task', arguments: { summary: 'Wrote notes.', artifacts: ['NOTES.md'] } },
            ],
          },
        },
      ],
    });
    sandbox = await makeSandbox({
      specialists: {
        rust: { builder: 'builtin:rust', sandbox: { allowed_commands: ['cargo check'], timeout_s: 120 } },
      },
    });
    const env = testEnv(sandbox, server.url);
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox!.configPath], { env, cwd: sandbox!.dir });
    const original = await compositorCopy();
    const ran = await fabric(['run', '-s', 'rust', '--workspace', original, '--json', 'Write notes']);
    expect(ran.exitCode, ran.stderr).toBe(0);
    const run = JSON.parse(ran.stdout) as RunResult;
    expect(run).toMatchObject({ status: 'succeeded', steps: 4 });

    const same = await fabric(['replay', run.run_id, '--execute', '--workspace', await compositorCopy()]);
    expect(same.exitCode, `${same.stdout}\n${same.stderr}`).toBe(0);
    expect(same.stdout).toMatch(/^no differences: 4 tool calls answered as in run/m);
    expect(same.stderr).not.toContain('no --workspace');

    const changed = await compositorCopy();
    await appendFile(join(changed, 'src/region.rs'), '\n// A line the original run did not read.\n');
    const differs = await fabric(['replay', run.run_id, '--execute', '--workspace', changed, '--keep']);
    expect(differs.exitCode, differs.stderr).toBe(1);
    expect(differs.stdout).toMatch(/^1 difference from run \S+ \(4 of 4 recorded model turns\):$/m);
    expect(differs.stdout).toMatch(/^ {2}\[1\] read_file \(\S+\): the tool result differs$/m);
    expect(differs.stdout).toContain('A line the original run did not read.');
    const kept = /^workspace copy kept at (.+)$/m.exec(differs.stdout)?.[1];
    expect(kept).toBeDefined();
    temps.push(join(kept!, '..'));
    // The re-run wrote into the copy, not into the workspace it was copied from.
    expect(await readFile(join(kept!, 'NOTES.md'), 'utf8')).toBe('# Notes\nRegion is fine.\n');
    await expect(readFile(join(changed, 'NOTES.md'))).rejects.toThrow(/ENOENT/);
  });

  it('says, on stderr only, that a re-run without --workspace starts from the workspace the run already edited', async () => {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script: [
        {
          reply: {
            toolCalls: [{ name: 'write_file', arguments: { path: 'NOTES.md', content: '# Notes\n' } }],
          },
        },
        {
          reply: {
            toolCalls: [
              { name: 'finish_task', arguments: { summary: 'Wrote notes.', artifacts: ['NOTES.md'] } },
            ],
          },
        },
      ],
    });
    sandbox = await makeSandbox({ specialists: { rust: { builder: 'builtin:rust' } } });
    const env = testEnv(sandbox, server.url);
    const fabric = (args: string[]) =>
      spawnFabric([...args, '--config', sandbox!.configPath], { env, cwd: sandbox!.dir });
    const workspace = await mkdtemp(join(tmpdir(), 'fabric-ws-'));
    temps.push(workspace);
    // At the step limit the final turn skips the finish gate, so no cargo is needed.
    const ran = await fabric([
      'run',
      '-s',
      'rust',
      '--workspace',
      workspace,
      '--max-steps',
      '1',
      '--json',
      'Notes',
    ]);
    const run = JSON.parse(ran.stdout) as RunResult;
    expect(run.status, ran.stdout).toBe('max_steps');

    const replayed = await fabric(['replay', run.run_id, '--execute', '--json']);
    expect(replayed.stderr).toContain(
      `fabric replay: no --workspace, so the re-run works on a copy of ${workspace} as it is now, which already ` +
        "holds the run's edits: results may differ from the run's. To compare faithfully, pass " +
        '--workspace DIR with a pristine checkout of what the run started from.',
    );
    expect(JSON.parse(replayed.stdout)).toMatchObject({
      run_id: run.run_id,
      workspace: { source: workspace },
    });
  });
});

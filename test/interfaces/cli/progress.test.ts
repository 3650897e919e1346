import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unifiedDiff } from '../../../src/domain/unified-diff.ts';
import { ProgressReporter } from '../../../src/interfaces/cli/progress.ts';
import type { Style } from '../../../src/interfaces/cli/style.ts';
import { EXAMPLE_PACK, type Sandbox, makeSandbox, spawnFabric, testEnv } from '../../support/fabric-cli.ts';
import { type FakeLlmServer, type ScriptedTurn, startFakeLlmServer } from '../../support/fake-llm-server.ts';

const MODEL = 'qwen/qwen3-coder-30b';

describe('fabric run as a person reads it', () => {
  let server: FakeLlmServer;
  let sandbox: Sandbox;
  beforeEach(async () => {
    sandbox = await makeSandbox({
      specialists: {
        units: { builder: `${EXAMPLE_PACK}#buildPack` },
        research: { builder: 'builtin:research' },
      },
    });
  });
  afterEach(async () => {
    await server?.stop();
    await sandbox.cleanup();
  });

  async function run(args: string[], script: ScriptedTurn[]) {
    server = await startFakeLlmServer({
      flavor: 'lm_studio',
      models: [{ id: MODEL, toolUse: true }],
      script,
    });
    return spawnFabric(['run', '--config', sandbox.configPath, ...args], {
      env: testEnv(sandbox, server.url),
      cwd: sandbox.dir,
    });
  }

  it('reports a run stopped by --max-steps 1 as stopped at the limit of 1 step, exit 3', async () => {
    const result = await run(
      ['-s', 'units', '--max-steps', '1', 'Convert 1 m'],
      [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'm', to: 'cm' } }] } },
        {
          reply: {
            toolCalls: [{ name: 'finish_task', arguments: { summary: 'Out of steps.', answer: '100 cm' } }],
          },
        },
      ],
    );
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(
      /■ max_steps: stopped at the limit of 1 step; the model reported what is left · /,
    );
    expect(result.stderr).not.toMatch(/after 2 steps|step\(s\)/);
    expect(result.stdout).toContain('Out of steps.');
  });

  it('says the model did not report when its final turn has no finish_task, and what the result is', async () => {
    const result = await run(
      ['-s', 'units', '--max-steps', '1', 'Convert 1 m'],
      [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'm', to: 'cm' } }] } },
        { reply: { content: '' } },
      ],
    );
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toMatch(
      /■ max_steps: stopped at the limit of 1 step; the model did not report \(no finish_task\), so the result only says the run stopped · /,
    );
    expect(result.stderr).not.toContain('the model reported');
    expect(result.stdout).toContain(
      'The step limit of 1 is reached. The model did not report through finish_task.',
    );
  });

  it('says a final finish_task that was rejected is no report', async () => {
    const result = await run(
      ['-s', 'units', '--max-steps', '1', 'Convert 1 m'],
      [
        { reply: { toolCalls: [{ name: 'convert_units', arguments: { value: 1, from: 'm', to: 'cm' } }] } },
        { reply: { toolCalls: [{ name: 'finish_task', arguments: { answer: 'no summary' } }] } },
      ],
    );
    expect(result.exitCode).toBe(3);
    expect(result.stderr).toContain('finish_task rejected');
    // It did call finish_task: "no finish_task" would not be true (issue 20).
    expect(result.stderr).toMatch(
      /■ max_steps: stopped at the limit of 1 step; the model's report \(finish_task\) was rejected, so the result only says the run stopped · /,
    );
  });

  it('prints the list fields of the payload as lists, not raw JSON', async () => {
    const payload = {
      answer: 'Smithay is a Rust library.',
      findings: ['It has a DRM backend.', 'It speaks Wayland.'],
    };
    const result = await run(
      ['-s', 'research', 'What is Smithay?'],
      [{ reply: { toolCalls: [{ name: 'finish_task', arguments: payload }] } }],
    );
    expect(result.exitCode, result.stderr).toBe(0);
    // execa drops the final newline.
    expect(result.stdout).toBe(
      'answer: Smithay is a Rust library.\nfindings:\n  - It has a DRM backend.\n  - It speaks Wayland.',
    );
  });
});

describe('the progress of a tool that changed a file', () => {
  const stamp = { v: 1, ts: '2026-01-01T00:00:00.000Z', run_id: 'r', seq: 3 } as const;
  const plain: Style = {
    dim: (text) => text,
    bold: (text) => text,
    green: (text) => text,
    red: (text) => text,
    yellow: (text) => text,
    cyan: (text) => text,
  };

  function lineFor(diff: string | undefined): string {
    let out = '';
    const reporter = new ProgressReporter({ write: (text: string) => (out += text) }, plain);
    reporter.onEvent({
      ...stamp,
      kind: 'tool_result',
      step: 1,
      call_id: 'c1',
      tool: 'edit_file',
      result: 'Edited src/region.rs. Run cargo_check next.',
      duration_ms: 2,
      ...(diff === undefined ? {} : { diff }),
    });
    return out;
  }

  it('shows the diff as a short stat with the file name', () => {
    const diff = unifiedDiff('src/region.rs', 'a\nb\nc\n', 'a\nB\nc\nd\ne\n');
    expect(lineFor(diff)).toBe('  ✓ edit_file +3 −1 src/region.rs (2 ms)\n');
  });

  it('says when the recorded diff was cut', () => {
    const diff = unifiedDiff('big.rs', null, 'x\n'.repeat(500), 100);
    expect(lineFor(diff)).toMatch(/✓ edit_file \+\d+ −0 big\.rs \(cut\) \(2 ms\)/);
  });

  it('shows the result text for an older runlog without a diff', () => {
    expect(lineFor(undefined)).toBe('  ✓ edit_file Edited src/region.rs. Run cargo_check next. (2 ms)\n');
  });
});

import { join } from 'node:path';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { SandboxSchema } from '../../../src/config/schema.ts';
import type { CommandResult } from '../../../src/infrastructure/sandbox/command-sandbox.ts';
import { clippyCount, countClippyWarnings } from '../../../src/infrastructure/cargo-checks/clippy-count.ts';
import { SandboxValidator } from '../../../src/infrastructure/cargo-checks/sandbox-validator.ts';
import { tempDir } from '../../support/temp-dirs.ts';

/** One `compiler-message` line of `cargo clippy --message-format=json`. */
function warning(code: string, line: number, target = 'lib'): string {
  return JSON.stringify({
    reason: 'compiler-message',
    target: { name: target },
    message: {
      level: 'warning',
      message: `unneeded ${code}`,
      code: { code: `clippy::${code}` },
      spans: [{ file_name: 'src/lib.rs', line_start: line, column_start: 5, is_primary: true }],
      children: [],
    },
  });
}

function result(over: Partial<CommandResult>): CommandResult {
  return {
    argv: ['cargo', 'clippy', '--message-format=json'],
    osSandbox: 'none',
    notice: undefined,
    end: 'exited',
    exitCode: 0,
    stdout: '',
    stderr: '',
    outputBytes: 0,
    truncated: false,
    durationMs: 1,
    spawnError: undefined,
    ...over,
  };
}

describe('clippy warning counts', () => {
  it('counts each warning once, though lib and test targets both report it, and not the summary', () => {
    const summary = JSON.stringify({
      reason: 'compiler-message',
      message: { level: 'warning', message: '2 warnings emitted', spans: [], children: [] },
    });
    const stdout = [
      warning('needless_return', 2),
      warning('needless_return', 2, 'lib test'),
      warning('let_and_return', 7),
      summary,
      '{"reason":"build-finished","success":true}',
    ].join('\n');
    expect(countClippyWarnings(stdout)).toBe(2);
    expect(clippyCount(result({ stdout }))).toEqual({ warnings: 2 });
  });

  it('has no figure, and says why, when clippy fails or is cut short', () => {
    expect(clippyCount(result({ exitCode: 101, stderr: 'error: no such command: `clippy`\n' }))).toEqual({
      warnings: null,
      reason: 'cargo clippy exited with code 101: error: no such command: `clippy`',
    });
    expect(clippyCount(result({ end: 'timeout', exitCode: undefined }))).toEqual({
      warnings: null,
      reason: 'cargo clippy ended: timeout',
    });
    expect(clippyCount(result({ truncated: true })).warnings).toBeNull();
  });

  it('is null, without running anything, when the allowlist does not allow cargo clippy', async () => {
    const repo = await tempDir('clippy-not-allowed-');
    const validator = await SandboxValidator.create({
      repo,
      commands: ['cargo build'],
      sandbox: { ...v.parse(SandboxSchema, {}), allowed_commands: ['cargo build', 'cargo test'] },
      runsDir: join(repo, 'runs'),
      configFile: join(repo, 'fabric.yaml'),
    });
    expect(await validator.countClippy(new AbortController().signal)).toEqual({
      warnings: null,
      reason: "cargo clippy is not in the specialist's sandbox.allowed_commands (cargo build, cargo test)",
    });
  });
});

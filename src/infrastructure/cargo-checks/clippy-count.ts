import type { ClippyCount } from '../../application/daemon/daemon-ports.ts';
import { parseCargoJson } from '../packs/rust/diagnostics.ts';
import type { CommandResult } from '../sandbox/command-sandbox.ts';

/** The command the daemon counts warnings with; the specialist's allowlist must allow it. */
export const CLIPPY_COMMAND = ['cargo', 'clippy', '--message-format=json'] as const;

/** Output kept from clippy: its JSON repeats every span's source, far past the shell's cap. */
export const CLIPPY_OUTPUT_LIMIT = 8 * 1024 * 1024;

/**
 * Clippy's warnings in `cargo clippy --message-format=json` output, deduplicated as the rust
 * pack's diagnostics are (a warning reached through two targets — lib and test — is one).
 */
export function countClippyWarnings(stdout: string): number {
  return parseCargoJson(stdout).diagnostics.filter((diagnostic) => diagnostic.level === 'warning').length;
}

/**
 * What a clippy run came to: its warning count when it ran to the end and succeeded; otherwise
 * null and why (a crate that does not compile has no meaningful count).
 */
export function clippyCount(result: CommandResult): ClippyCount {
  if (result.end === 'spawn_failed') {
    return { warnings: null, reason: `cargo clippy did not start: ${result.spawnError ?? 'unknown error'}` };
  }
  if (result.end !== 'exited') return { warnings: null, reason: `cargo clippy ended: ${result.end}` };
  if (result.truncated) {
    return { warnings: null, reason: `cargo clippy printed more than ${CLIPPY_OUTPUT_LIMIT} bytes` };
  }
  if (result.exitCode !== 0) {
    const last = lastLines(result.stderr, 3);
    return {
      warnings: null,
      reason: `cargo clippy exited with code ${result.exitCode}${last === '' ? '' : `: ${last}`}`,
    };
  }
  return { warnings: countClippyWarnings(result.stdout) };
}

function lastLines(text: string, count: number): string {
  const lines = text
    .trim()
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  const kept = lines.slice(-count).join(' / ');
  return kept.length > 400 ? `${kept.slice(0, 399)}…` : kept;
}

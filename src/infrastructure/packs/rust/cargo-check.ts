import { ToolError } from '../../../domain/errors.ts';
import type { CommandSandbox } from '../../sandbox/command-sandbox.ts';
import { countDiagnostics, formatDiagnostics, parseCargoJson } from './diagnostics.ts';

/** The outcome of `cargo check`: whether the workspace compiles, and the report for the model. */
export interface CheckOutcome {
  readonly ok: boolean;
  readonly report: string;
}

/** Enough room for thousands of JSON diagnostics; the model only ever sees the compact form. */
const JSON_OUTPUT_LIMIT = 8 * 1024 * 1024;

/**
 * Runs `cargo check --message-format=json` in the sandbox and answers with compact diagnostics.
 * When cargo fails before any compiler message (a bad manifest, a build script that panics),
 * the tail of its stderr is the report.
 */
export async function cargoCheck(sandbox: CommandSandbox, signal: AbortSignal): Promise<CheckOutcome> {
  const result = await sandbox.runTrusted(
    ['cargo', 'check', '--message-format=json'],
    signal,
    JSON_OUTPUT_LIMIT,
  );
  if (result.end === 'timeout') {
    throw new ToolError(
      `cargo check timed out after ${Math.round(result.durationMs / 1000)}s and was killed with everything it started ` +
        '(a build script or proc-macro that never ends?).',
    );
  }
  if (result.end === 'cancelled') throw new ToolError('cargo check was cancelled.');
  if (result.end === 'flood')
    throw new ToolError('cargo check printed more output than the fabric accepts and was killed.');
  if (result.end === 'spawn_failed') throw new ToolError(`cargo could not be started: ${result.spawnError}`);
  const parsed = parseCargoJson(result.stdout);
  const ok = result.exitCode === 0 && parsed.success !== false;
  const listed = formatDiagnostics(parsed.diagnostics);
  const counts = countDiagnostics(parsed.diagnostics);
  if (ok) return { ok, report: `cargo check passed (${counts}).${listed ? `\n${listed}` : ''}` };
  const errors = parsed.diagnostics.some((diagnostic) => diagnostic.level === 'error');
  const stderr = result.stderr.trim();
  const tail = errors ? '' : `\n${stderr.length > 3000 ? `…${stderr.slice(-3000)}` : stderr}`;
  return {
    ok,
    report: `cargo check failed (${counts}, exit code ${result.exitCode}).\n${listed}${tail}`.trim(),
  };
}

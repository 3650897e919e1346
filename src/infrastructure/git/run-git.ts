import { errorMessage, FabricError } from '../../domain/errors.ts';
import { loadExeca } from '../lazy-import.ts';

/** A finished git command. */
export interface GitOutput {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs git with an argv (never a shell) in `cwd`. execa is imported when git first runs, so a
 * command that never touches git does not load it.
 */
export async function runGit(
  cwd: string,
  args: readonly string[],
  /** More environment (GIT_DIR, GIT_INDEX_FILE) for this command. */
  env: Readonly<Record<string, string>> = {},
): Promise<GitOutput> {
  const { execa } = await loadExeca();
  try {
    const result = await execa('git', [...args], {
      cwd,
      reject: false,
      stdin: 'ignore',
      // Hooks and editors must not wait for a terminal that is not there.
      env: { GIT_TERMINAL_PROMPT: '0', GIT_EDITOR: 'true', ...env },
    });
    if (result.failed && result.exitCode === undefined) {
      throw new FabricError(
        'usage',
        `Cannot run git (${result.shortMessage}). Install git and put it on PATH.`,
      );
    }
    return { exitCode: result.exitCode ?? 1, stdout: result.stdout, stderr: result.stderr };
  } catch (error) {
    if (error instanceof FabricError) throw error;
    throw new FabricError(
      'usage',
      `Cannot run git: ${errorMessage(error)}. Install git and put it on PATH.`,
      {
        cause: error,
      },
    );
  }
}

/** Runs git (with more environment, if given) and returns stdout, or throws `code` with what git said. */
export async function git(
  cwd: string,
  args: readonly string[],
  what: string,
  code: 'usage' | 'tool_failed' = 'tool_failed',
  env: Readonly<Record<string, string>> = {},
): Promise<string> {
  const out = await runGit(cwd, args, env);
  if (out.exitCode !== 0) {
    const said = (out.stderr || out.stdout).trim();
    throw new FabricError(
      code,
      `${what} failed (git ${args.join(' ')}): ${said || `exit code ${out.exitCode}`}`,
    );
  }
  return out.stdout;
}

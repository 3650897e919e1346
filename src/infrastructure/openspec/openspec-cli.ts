import type { OpenSpecCli, OpenSpecCliResult } from '../../application/daemon/daemon-ports.ts';
import { loadExeca } from '../lazy-import.ts';

/** Output kept from the CLI (its end: where it says what failed). */
const OUTPUT_TAIL = 4000;

/**
 * OpenSpec's own CLI (`openspec` on the PATH, SPEC §11.1): `validate --strict` on a change whose
 * tasks are all done, and `archive`. Run with an argv in the repository, no prompts, no telemetry.
 */
export class OpenSpecCommand implements OpenSpecCli {
  readonly #repo: string;

  private constructor(repo: string) {
    this.#repo = repo;
  }

  /** The CLI when `openspec --version` runs in the repository; null when it is not on the PATH. */
  static async find(repo: string): Promise<OpenSpecCommand | null> {
    const command = new OpenSpecCommand(repo);
    const version = await command.#run(['--version'], undefined);
    return version.exitCode === 0 ? command : null;
  }

  async validate(changeId: string, signal: AbortSignal): Promise<OpenSpecCliResult> {
    return result(await this.#run(['validate', changeId, '--strict', '--no-interactive'], signal));
  }

  async archive(changeId: string, signal: AbortSignal): Promise<OpenSpecCliResult> {
    return result(await this.#run(['archive', changeId, '--yes'], signal));
  }

  async #run(
    args: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<{ exitCode: number | null; output: string }> {
    const { execa } = await loadExeca();
    const out = await execa('openspec', [...args], {
      cwd: this.#repo,
      reject: false,
      stdin: 'ignore',
      all: true,
      env: { OPENSPEC_TELEMETRY: '0', NO_COLOR: '1' },
      ...(signal === undefined ? {} : { cancelSignal: signal }),
    });
    return { exitCode: out.exitCode ?? null, output: (out.all ?? '').trim() || out.shortMessage || '' };
  }
}

function result(out: { exitCode: number | null; output: string }): OpenSpecCliResult {
  const output = out.output.length <= OUTPUT_TAIL ? out.output : `…${out.output.slice(-OUTPUT_TAIL)}`;
  return { ok: out.exitCode === 0, output };
}

/**
 * Whole tool outputs a run kept because they were cut to fit the window (SPEC §17), beside its
 * runlog: `<runs_dir>/<run_id>/outputs/<call_id>.txt`. The runs directory is out of every pack's
 * reach; only the loop's `read_output` reads them, and people.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { KeptOutputs } from '../../application/run/output-budget.ts';

/** A call id as a file name: ids come from the model server, so nothing in them may name a path. */
function fileName(callId: string): string {
  return `${callId.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 120) || 'call'}.txt`;
}

export class FileKeptOutputs implements KeptOutputs {
  readonly #runsDir: string;

  constructor(runsDir: string) {
    this.#runsDir = runsDir;
  }

  async keep(runId: string, callId: string, text: string): Promise<string> {
    const dir = join(this.#runsDir, runId, 'outputs');
    await mkdir(dir, { recursive: true });
    const path = join(dir, fileName(callId));
    await writeFile(path, text, 'utf8');
    return path;
  }

  async read(runId: string, callId: string): Promise<string | null> {
    return readFile(join(this.#runsDir, runId, 'outputs', fileName(callId)), 'utf8').catch(() => null);
  }
}

/** Kept tool outputs in memory, for a replay (a check, not a new run: nothing under runs/). */
import type { KeptOutputs } from '../../application/run/output-budget.ts';

export class MemoryKeptOutputs implements KeptOutputs {
  readonly #texts = new Map<string, string>();

  async keep(runId: string, callId: string, text: string): Promise<string> {
    this.#texts.set(`${runId}/${callId}`, text);
    return `memory:${runId}/outputs/${callId}`;
  }

  async read(runId: string, callId: string): Promise<string | null> {
    return this.#texts.get(`${runId}/${callId}`) ?? null;
  }
}

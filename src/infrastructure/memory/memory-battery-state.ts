/**
 * Battery states kept in memory (`BatteryStates`), for a battery that needs no disk: the tests of
 * the battery's use cases, an embedding application. Like the files, a state read back is a copy
 * of what was saved, never the object the session holds.
 */
import type { BatteryState } from '../../application/battery/battery-types.ts';
import type { BatteryStates } from '../../application/battery/session-ports.ts';
import { FabricError } from '../../domain/errors.ts';

export class MemoryBatteryStates implements BatteryStates {
  readonly #states = new Map<string, string>();
  /** Every state saved, in order (what a test checks the session wrote, and when). */
  readonly saved: BatteryState[] = [];

  constructor(states: readonly BatteryState[] = []) {
    for (const state of states) this.#states.set(state.plan.id, JSON.stringify(state));
  }

  pathOf(id: string): string {
    return `memory:batteries/${id}`;
  }

  async save(state: BatteryState): Promise<void> {
    const text = JSON.stringify(state);
    this.#states.set(state.plan.id, text);
    this.saved.push(JSON.parse(text) as BatteryState);
  }

  async ids(): Promise<string[]> {
    return [...this.#states.keys()].sort().reverse();
  }

  async read(id: string): Promise<BatteryState> {
    if (!/^[A-Za-z0-9._-]+$/.test(id))
      throw new FabricError(
        'usage',
        `"${id}" is not a battery id (it looks like bat-20261122T055512Z-3f9a1c).`,
      );
    const text = this.#states.get(id);
    if (text === undefined) throw new FabricError('run_not_found', `No battery "${id}" in memory.`);
    return JSON.parse(text) as BatteryState;
  }
}

/**
 * The order a battery's cells run in (SPEC §12.1): model after model, so that a server loads each
 * model once. LM Studio's JIT loading with Auto-Evict (its default) keeps one JIT-loaded model a
 * server: cells taken task after task alternate the models and reload one for every cell.
 *
 * Each worker (a cell at a time) keeps to its model while that model has cells left. A worker
 * free to pick takes a model no other worker holds while fewer models are held than there are
 * servers (each model then runs on its own server, where it is loaded); else it joins the held
 * model with the most cells left (one server: every worker on the same model).
 */
import type { CellKey } from './battery-types.ts';

export class CellSchedule {
  /** The cells left, per model, in the order given (plan order within a model). */
  readonly #left = new Map<string, CellKey[]>();
  /** How many workers hold each model now. */
  readonly #held = new Map<string, number>();
  readonly #servers: number;

  /** `cells` in the order a model's cells should run; `servers` at least 1. */
  constructor(cells: readonly CellKey[], servers: number) {
    for (const cell of cells) this.#left.set(cell.model, [...(this.#left.get(cell.model) ?? []), cell]);
    this.#servers = Math.max(1, servers);
  }

  /** How many cells are left. */
  get size(): number {
    let size = 0;
    for (const cells of this.#left.values()) size += cells.length;
    return size;
  }

  /**
   * The next cell for a worker that last held `current` (undefined for a worker starting), or
   * undefined when none is left. The worker then holds the cell's model until its next call.
   */
  next(current: string | undefined): CellKey | undefined {
    if (current !== undefined) this.#release(current);
    const model = this.#pick(current);
    if (model === undefined) return undefined;
    const cells = this.#left.get(model)!;
    const cell = cells.shift()!;
    if (cells.length === 0) this.#left.delete(model);
    this.#held.set(model, (this.#held.get(model) ?? 0) + 1);
    return cell;
  }

  /** Whether `model` has no cell left and no worker holds it: the battery is done with it. */
  finished(model: string): boolean {
    return !this.#left.has(model) && !this.#held.has(model);
  }

  /** A worker that stops without asking for another cell lets its model go. */
  release(model: string): void {
    this.#release(model);
  }

  #release(model: string): void {
    const held = (this.#held.get(model) ?? 0) - 1;
    if (held > 0) this.#held.set(model, held);
    else this.#held.delete(model);
  }

  #pick(current: string | undefined): string | undefined {
    if (current !== undefined && this.#left.has(current)) return current;
    const models = [...this.#left.keys()];
    if (models.length === 0) return undefined;
    const heldWithCells = models.filter((model) => this.#held.has(model));
    const free = models.filter((model) => !this.#held.has(model));
    if (free.length > 0 && (heldWithCells.length === 0 || this.#heldCount() < this.#servers)) return free[0];
    if (heldWithCells.length === 0) return free[0];
    return heldWithCells.reduce((best, model) =>
      this.#left.get(model)!.length > this.#left.get(best)!.length ? model : best,
    );
  }

  #heldCount(): number {
    return this.#held.size;
  }
}

/**
 * Model cards kept in two places (SPEC §20): the files under the runs directory, always, and the
 * control plane when the process has one, so machines sharing a Postgres control plane share what
 * each measured. The control plane is best-effort, as for runs (SPEC §7): a database that is down,
 * refuses or hangs leaves the files, and never fails a probe, a listing or a run's resolution.
 */
import { errorMessage } from '../../domain/errors.ts';
import {
  type BatteryMark,
  type ModelCard,
  type ModelCardRows,
  type ModelCardStore,
  cardKey,
} from './model-card.ts';

export interface SharedModelCardsOptions {
  /** The control plane's cards, or null without one (opened on first use). */
  readonly shared: () => Promise<ModelCardRows | null>;
  /** The most a read of the control plane may take before the files alone answer; default 3 s. */
  readonly readBoundMs?: number;
  /** Told when the control plane could not be read or written. */
  readonly onDegraded?: (message: string) => void;
  /**
   * A read failure that is no outage, so nothing is said and the files answer: the embedded
   * database held by another live process, which serves it (SPEC §7), as the control plane
   * itself treats it.
   */
  readonly quietRead?: (error: unknown) => boolean;
}

export class SharedModelCards implements ModelCardStore {
  readonly #local: ModelCardStore;
  readonly #options: SharedModelCardsOptions;

  constructor(local: ModelCardStore, options: SharedModelCardsOptions) {
    this.#local = local;
    this.#options = options;
  }

  async save(card: ModelCard): Promise<void> {
    await this.#local.save(card);
    try {
      await (await this.#options.shared())?.saveModelCard(card);
    } catch (error) {
      this.#options.onDegraded?.(
        `model card for ${card.model} kept in the runs directory only: the control plane refused it (${errorMessage(error)})`,
      );
    }
  }

  async list(): Promise<ModelCard[]> {
    const [local, shared] = await Promise.all([this.#local.list(), this.#sharedCards()]);
    return mergeCards(local, shared);
  }

  async #sharedCards(): Promise<ModelCard[]> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${this.#options.readBoundMs ?? 3000} ms`)),
        this.#options.readBoundMs ?? 3000,
      );
    });
    try {
      const rows = await this.#options.shared();
      return rows === null ? [] : await Promise.race([rows.modelCards(), bound]);
    } catch (error) {
      if (this.#options.quietRead?.(error) === true) return [];
      this.#options.onDegraded?.(
        `model cards read from the runs directory only: the control plane did not answer (${errorMessage(error)})`,
      );
      return [];
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * One card per model and server from both places: the newer probe's, with each specialist's newest
 * battery mark from either (a battery on one machine and a probe on another both count).
 */
export function mergeCards(local: readonly ModelCard[], shared: readonly ModelCard[]): ModelCard[] {
  const byKey = new Map<string, ModelCard>();
  for (const card of [...local, ...shared]) {
    const key = cardKey(card);
    const other = byKey.get(key);
    if (other === undefined) {
      byKey.set(key, card);
      continue;
    }
    const newer = card.probedAt > other.probedAt ? card : other;
    byKey.set(key, { ...newer, battery: newestMarks(other.battery, card.battery) });
  }
  return [...byKey.values()];
}

function newestMarks(
  a: Readonly<Record<string, BatteryMark>>,
  b: Readonly<Record<string, BatteryMark>>,
): Record<string, BatteryMark> {
  const marks: Record<string, BatteryMark> = { ...a };
  for (const [specialist, mark] of Object.entries(b)) {
    const old = marks[specialist];
    if (old === undefined || mark.at > old.at) marks[specialist] = mark;
  }
  return marks;
}

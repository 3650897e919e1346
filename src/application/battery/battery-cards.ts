/**
 * A battery's results onto the model cards (SPEC §20): each model's pass rate for the battery's
 * specialist becomes that specialist's mark on the model's cards, which resolution ranks by before
 * any probe score. Best-effort: the battery's state file is its record, and a card store that
 * fails never fails the battery.
 */
import type { ModelCardStore } from '../models/model-card.ts';
import { sameModel } from '../models/resolve-model.ts';
import type { BatterySummary } from './battery-summary.ts';

/**
 * Writes each counted model's pass rate onto its cards (one per server it was probed on); a model
 * never probed has no card to mark (`fabric models probe` makes one, and the next battery marks
 * it). Returns the models marked.
 */
export async function markCards(
  cards: ModelCardStore,
  specialist: string,
  summary: BatterySummary,
  at: string,
): Promise<string[]> {
  const kept = await cards.list();
  const marked: string[] = [];
  for (const model of summary.models) {
    if (model.total === 0 || model.pass_rate === null) continue;
    const mine = kept.filter((card) => sameModel(card.model, model.model));
    for (const card of mine) {
      await cards.save({
        ...card,
        battery: { ...card.battery, [specialist]: { passRate: model.pass_rate, runs: model.total, at } },
      });
    }
    if (mine.length > 0) marked.push(model.model);
  }
  return marked;
}

/**
 * `control.model_cards` (SPEC §20, migration 13): one row per model and server, the card as
 * jsonb without its raw exchanges (those stay in the card files and in a `--report`). Written
 * with one upsert that never lets an older probe replace a newer one, so two machines probing the
 * same server leave the newest card.
 */
import type { ModelCard } from '../../application/models/model-card.ts';
import { jsonParam } from './json-param.ts';
import type { SqlQuery } from './sql-executor.ts';

const UPSERT = `insert into control.model_cards (backend, base_url, model, probed_at, card, updated_at)
  values ($1, $2, $3, $4, $5::text::jsonb, now())
  on conflict (backend, base_url, model) do update set
    probed_at = excluded.probed_at, card = excluded.card, updated_at = now()
  where control.model_cards.probed_at <= excluded.probed_at`;

/** Writes (or rewrites) a card's row; its raw exchanges are left out. */
export async function upsertModelCard(db: SqlQuery, card: ModelCard): Promise<void> {
  const kept: ModelCard = { ...card, probes: card.probes.map((probe) => ({ ...probe, exchanges: [] })) };
  await db.query(UPSERT, [card.backend, card.baseUrl, card.model, card.probedAt, jsonParam(kept)]);
}

/** Every card in the control plane, by backend, server and model. */
export async function queryModelCards(db: SqlQuery): Promise<ModelCard[]> {
  const rows = await db.query<{ card: unknown }>(
    'select card from control.model_cards order by backend, base_url, model',
  );
  return rows.map((row) => (typeof row.card === 'string' ? JSON.parse(row.card) : row.card) as ModelCard);
}

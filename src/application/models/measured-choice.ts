/**
 * The best available model by measured ability (SPEC §20): with model cards, a specialist gets the
 * candidate that did best for it (its battery pass rate, else the probe score), never one measured
 * unable to call tools; the reason names the measurement and its date. Without cards, nothing here
 * applies and SPEC §5's rule stands.
 */
import type { CatalogModel } from '../ports.ts';
import { type ModelCard, cardFor, staleness } from './model-card.ts';

/** What resolution knows of measurements: the cards, and the specialist the model is for. */
export interface Measurements {
  readonly cards: readonly ModelCard[];
  readonly specialist?: string | undefined;
}

export interface MeasuredChoice {
  /** The measured best, with its reason; undefined when no candidate was measured able. */
  readonly best?: { readonly model: CatalogModel; readonly reason: string };
  /** Candidates measured unable to call tools (natively or in a dialect the fabric reads). */
  readonly unable: readonly CatalogModel[];
}

/** Picks among `candidates` (already in SPEC §5 order, which breaks ties) by their cards. */
export function chooseMeasured(
  candidates: readonly CatalogModel[],
  measurements: Measurements,
): MeasuredChoice {
  const { ranked, unable } = rankMeasured(candidates, measurements);
  const top = ranked[0];
  if (top === undefined) return { unable };
  return { best: { model: top.model, reason: reasonFor(top, measurements.specialist) }, unable };
}

/** A candidate measured able to call tools, and what its measurement was. */
export interface Measured {
  readonly model: CatalogModel;
  readonly card: ModelCard;
  readonly battery: { readonly passRate: number; readonly runs: number; readonly at: string } | undefined;
}

/**
 * The candidates measured able, best first (battery pass rate for the specialist, else probe
 * score; native before dialect on a tie; then the candidates' own order), and those measured unable.
 */
export function rankMeasured(
  candidates: readonly CatalogModel[],
  measurements: Measurements,
): { readonly ranked: readonly Measured[]; readonly unable: readonly CatalogModel[] } {
  const unable: CatalogModel[] = [];
  const able: Measured[] = [];
  for (const model of candidates) {
    const card = cardFor(measurements.cards, model);
    if (card === undefined) continue;
    if (card.tools === 'none') unable.push(model);
    if (card.tools !== 'native' && card.tools !== 'dialect') continue;
    const mark = measurements.specialist === undefined ? undefined : card.battery[measurements.specialist];
    const battery =
      mark === undefined || mark.passRate === null
        ? undefined
        : { passRate: mark.passRate, runs: mark.runs, at: mark.at };
    able.push({ model, card, battery });
  }
  // Stable sort: equal abilities keep the §5 order (tool-capable, loaded, smallest).
  const ranked = [...able].sort(
    (a, b) =>
      Number(b.battery !== undefined) - Number(a.battery !== undefined) ||
      ability(b) - ability(a) ||
      Number(b.card.tools === 'native') - Number(a.card.tools === 'native'),
  );
  return { ranked, unable };
}

function ability(measured: Measured): number {
  return measured.battery?.passRate ?? measured.card.score;
}

function reasonFor(measured: Measured, specialist: string | undefined): string {
  const stale = staleness(measured.card, measured.model);
  const said = measuredReason(measured, specialist);
  // A stale card still counts (the same model, most likely, re-pulled or served by a newer build)
  // but the reason says so, and how to measure it again.
  return stale === null
    ? said
    : `${said} (card ${stale}; \`fabric models probe ${measured.model.id}\` measures it again)`;
}

function measuredReason(measured: Measured, specialist: string | undefined): string {
  const { model } = measured;
  return `measured best: ${model.id}, ${measurement(measured, specialist)}, on ${model.backend} ${model.baseUrl}`;
}

/**
 * What was measured, with its date: `battery pass rate 0.8 for rust over 5 runs (2026-11-28)` or
 * `probe score 1 with native tool calls (probed 2026-11-28)`.
 */
export function measurement(measured: Measured, specialist: string | undefined): string {
  const { card, battery } = measured;
  if (battery !== undefined)
    return `battery pass rate ${battery.passRate} for ${specialist} over ${battery.runs} runs (${battery.at.slice(0, 10)})`;
  const calls =
    card.tools === 'dialect' ? `tool calls as text (${card.dialect ?? '?'})` : 'native tool calls';
  return `probe score ${card.score} with ${calls} (probed ${card.probedAt.slice(0, 10)})`;
}

/**
 * A model card (SPEC §20): what the probe suite measured of one model on one server, and what
 * batteries measured of it per specialist. Pure data and the rules that read it.
 */
import type { CatalogModel } from '../ports.ts';

/** How a probe ended: its check passed or failed, the server refused, it ran out of time, or it was not run. */
export type ProbeOutcome = 'pass' | 'fail' | 'error' | 'timeout' | 'skipped';

/** The probes, in the order they run. */
export const PROBE_IDS = [
  'native_call',
  'second_call',
  'finish_task',
  'json_arguments',
  'text_dialect',
  'reasoning',
  'window',
] as const;
export type ProbeId = (typeof PROBE_IDS)[number];

/** One request and what came back, as the probe saw it (kept raw for a bug report). */
export interface ProbeExchange {
  readonly request: unknown;
  readonly reply?: unknown;
  readonly error?: string;
}

export interface ProbeResult {
  readonly id: ProbeId;
  readonly outcome: ProbeOutcome;
  /** What the check found, in one sentence. */
  readonly detail: string;
  /** Measured figures: tokens, milliseconds, tokens per second. */
  readonly figures: Readonly<Record<string, number>>;
  readonly exchanges: readonly ProbeExchange[];
}

/** How the model calls tools, as measured: through the server's field, in a text dialect, or not at all. */
export type ToolAbility = 'native' | 'dialect' | 'none' | 'unknown';

/** One specialist's battery results on this model. */
export interface BatteryMark {
  readonly passRate: number | null;
  readonly runs: number;
  readonly at: string;
}

export interface ModelCard {
  readonly model: string;
  readonly backend: string;
  readonly baseUrl: string;
  /** The server's version or build, when it says. */
  readonly serverVersion: string | null;
  /** The model file as the server identified it when probed (Ollama's digest); absent on older cards. */
  readonly modelFile?: string | null;
  readonly quantisation: string | null;
  /** When the suite ran (ISO 8601). */
  readonly probedAt: string;
  readonly tools: ToolAbility;
  /** The dialect of its text calls, when it writes them. */
  readonly dialect: string | null;
  /** Passed probes over probes run, 0..1. */
  readonly score: number;
  readonly probes: readonly ProbeResult[];
  /** Tokens the suite generated and read. */
  readonly tokens: { readonly prompt: number; readonly completion: number };
  readonly battery: Readonly<Record<string, BatteryMark>>;
}

/** The score of a set of probe results: passes over probes that ran (skipped ones do not count). */
export function probeScore(probes: readonly ProbeResult[]): number {
  const ran = probes.filter((probe) => probe.outcome !== 'skipped');
  if (ran.length === 0) return 0;
  const passed = ran.filter((probe) => probe.outcome === 'pass').length;
  return Math.round((passed / ran.length) * 100) / 100;
}

/** A card in a few words, for a table column: `native 6/7 2026-11-28`. */
export function cardSummary(card: ModelCard): string {
  const ran = card.probes.filter((probe) => probe.outcome !== 'skipped');
  const passed = ran.filter((probe) => probe.outcome === 'pass').length;
  const tools = card.tools === 'dialect' ? `dialect ${card.dialect ?? '?'}` : card.tools;
  return `${tools} ${passed}/${ran.length} ${card.probedAt.slice(0, 10)}`;
}

/** The key a card is stored under: one per model and server. */
export function cardKey(card: Pick<ModelCard, 'model' | 'backend' | 'baseUrl'>): string {
  return `${card.backend} ${card.baseUrl} ${card.model}`;
}

/** Where cards are kept (SPEC §20): one per model and server, the newest replacing the older. */
export interface ModelCardStore {
  save(card: ModelCard): Promise<void>;
  list(): Promise<ModelCard[]>;
}

/** The card of this model on this server, if one was measured. */
export function cardFor(
  cards: readonly ModelCard[],
  model: { readonly id: string; readonly backend: string; readonly baseUrl: string },
): ModelCard | undefined {
  return cards.find(
    (card) => card.model === model.id && card.backend === model.backend && card.baseUrl === model.baseUrl,
  );
}

/** A control store that also keeps model cards (`control.model_cards`; an optional capability). */
export interface ModelCardRows {
  saveModelCard(card: ModelCard): Promise<void>;
  modelCards(): Promise<ModelCard[]>;
}

/** Whether a control store keeps model cards. */
export function isModelCardRows(store: unknown): store is ModelCardRows {
  const rows = store as Partial<ModelCardRows> | null;
  return typeof rows?.saveModelCard === 'function' && typeof rows.modelCards === 'function';
}

/**
 * Why a card no longer describes the model its server lists now, or null (SPEC §20: a card older
 * than the server's current model file or version is stale). Only what both sides know is
 * compared: the model file (Ollama's digest, which a new pull changes), the quantisation, and the
 * server's version.
 */
export function staleness(card: ModelCard, now: CatalogModel | undefined): string | null {
  if (now === undefined) return null;
  const changes: string[] = [];
  const changed = (before: string | null | undefined, after: string | undefined) =>
    before !== null && before !== undefined && after !== undefined && before !== after;
  if (changed(card.modelFile, now.fileId))
    changes.push(`the model file changed (${short(card.modelFile)} → ${short(now.fileId)})`);
  if (changed(card.quantisation, now.quantisation))
    changes.push(`the quantisation changed (${card.quantisation} → ${now.quantisation})`);
  const version = serverVersionOf(now.server);
  if (changed(card.serverVersion, version))
    changes.push(`the server changed (${card.serverVersion} → ${version})`);
  return changes.length === 0 ? null : `stale: ${changes.join(', ')} since it was probed`;
}

/**
 * The version in a catalog model's `server` (`Ollama 0.12.6` → `0.12.6`, `llama-server b6500-…`
 * → `b6500-…`): what a card keeps as `serverVersion`, so the two never disagree.
 */
export function serverVersionOf(server: string | undefined): string | undefined {
  if (server === undefined) return undefined;
  const space = server.indexOf(' ');
  return space === -1 ? server : server.slice(space + 1);
}

function short(id: string | null | undefined): string {
  return (id ?? '?').replace(/^sha256:/, '').slice(0, 12);
}

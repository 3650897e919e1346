import { mkdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  CallTotals,
  ControlStore,
  HealthRow,
  InsightsData,
  TimeWindow,
  UsageRow,
} from '../../application/control/control-ports.ts';
import {
  decideLmIndicator,
  LM_INDICATOR_RULES,
  type LmIndicator,
  type LmIndicatorRules,
} from '../../application/control/lm-indicator.ts';

/** The window of the `*_7d` exports. */
export const EXPORT_DAYS = 7;

/** What every 7-day export starts with. `db_off` means the numbers are empty because nothing could be read. */
export interface ExportMeta {
  readonly generated_at: string;
  readonly window: { readonly from: string; readonly to: string; readonly days: number };
  readonly db_off: boolean;
}

/** `lm_usage_7d.json`: calls and tokens per UTC day and model. */
export interface LmUsage7d extends ExportMeta {
  readonly rows: readonly UsageRow[];
}

/** `lm_health_7d.json`: per backend kind (`lm_studio`, `ollama`, `llama_cpp`, `vllm`, `openai`) and day, outcome and latency. */
export interface LmHealth7d extends ExportMeta {
  readonly rows: readonly HealthRow[];
}

/** `lm_insights_7d.json`: totals and what stands out. */
export interface LmInsights7d extends ExportMeta, InsightsData {
  readonly totals: CallTotals & { readonly runs: number; readonly total_tokens: number };
}

/** The four exports, as written to files and served over HTTP. */
export interface ControlExports {
  readonly lm_usage_7d: LmUsage7d;
  readonly lm_health_7d: LmHealth7d;
  readonly lm_insights_7d: LmInsights7d;
  readonly lm_indicator: LmIndicator;
}

/** Options of `buildExports` and `exportAll`. */
export interface ExportOptions {
  /** The end of the windows; tests pin it. */
  readonly now?: Date;
  readonly rules?: LmIndicatorRules;
}

const HOUR_MS = 3_600_000;

/**
 * Computes the exports. Never throws for a database that is off: with no store, or one that
 * fails, the indicator is `offline`/`db_off` and the others are empty with `db_off: true`.
 */
export async function buildExports(
  store: ControlStore | null,
  options: ExportOptions = {},
): Promise<ControlExports> {
  const now = options.now ?? new Date();
  const rules = options.rules ?? LM_INDICATOR_RULES;
  const week: TimeWindow = { from: new Date(now.getTime() - EXPORT_DAYS * 24 * HOUR_MS), to: now };
  const recent: TimeWindow = { from: new Date(now.getTime() - rules.windowHours * HOUR_MS), to: now };
  const meta = (dbOff: boolean): ExportMeta => ({
    generated_at: now.toISOString(),
    window: { from: week.from.toISOString(), to: week.to.toISOString(), days: EXPORT_DAYS },
    db_off: dbOff,
  });
  if (store !== null) {
    try {
      // A fresh embedded database has no schema yet; exporting from it is "no calls", not an error.
      await store.migrate();
      const usage = await store.usage(week);
      const health = await store.health(week);
      const insights = await store.insights(week);
      const weekTotals = await store.callTotals(week);
      const recentTotals = await store.callTotals(recent);
      return {
        lm_usage_7d: { ...meta(false), rows: usage },
        lm_health_7d: { ...meta(false), rows: health },
        lm_insights_7d: {
          ...meta(false),
          totals: {
            ...weekTotals,
            runs: insights.runs_by_status.reduce((sum, row) => sum + row.runs, 0),
            total_tokens: usage.reduce((sum, row) => sum + row.total_tokens, 0),
          },
          ...insights,
        },
        lm_indicator: decideLmIndicator(recentTotals, rules),
      };
    } catch {
      // Falls through to the db_off documents: downstream apps get files they can read.
    }
  }
  return {
    lm_usage_7d: { ...meta(true), rows: [] },
    lm_health_7d: { ...meta(true), rows: [] },
    lm_insights_7d: {
      ...meta(true),
      totals: { total_calls: 0, successes: 0, failures: 0, runs: 0, total_tokens: 0 },
      top_models: [],
      slowest_model: null,
      error_reasons: [],
      runs_by_status: [],
    },
    lm_indicator: decideLmIndicator(null, rules),
  };
}

/** The file names `exportAll` writes, by export. */
export const EXPORT_FILES = {
  lm_usage_7d: 'lm_usage_7d.json',
  lm_health_7d: 'lm_health_7d.json',
  lm_insights_7d: 'lm_insights_7d.json',
  lm_indicator: 'lm_indicator.json',
} as const satisfies Record<keyof ControlExports, string>;

/**
 * Writes the four exports as JSON files in `outDir` (`fabric control export`). Each file is
 * written whole and renamed into place, so a reader never sees half a file. Throws only when
 * `outDir` cannot be written.
 */
export async function exportAll(
  store: ControlStore | null,
  outDir: string,
  options: ExportOptions = {},
): Promise<{ files: string[]; dbOff: boolean; exports: ControlExports }> {
  const exports = await buildExports(store, options);
  await mkdir(outDir, { recursive: true });
  const files: string[] = [];
  for (const key of Object.keys(EXPORT_FILES) as (keyof ControlExports)[]) {
    const path = join(outDir, EXPORT_FILES[key]);
    const temp = `${path}.${crypto.randomUUID()}.tmp`;
    await writeFile(temp, `${JSON.stringify(exports[key], null, 2)}\n`, 'utf8');
    await rename(temp, path);
    files.push(path);
  }
  return { files, dbOff: exports.lm_indicator.db_off, exports };
}

/** Numbers and tables shared by the benches: medians, percentiles, ratio columns. */

/** True when `BENCH_QUICK` is set: every part shrinks its rounds to check that it works, not to measure. */
export const QUICK = process.env.BENCH_QUICK !== undefined && process.env.BENCH_QUICK !== '0';

/** Rounds of a part: `BENCH_ROUNDS` when set, else `quick` under `BENCH_QUICK`, else `full`. */
export function rounds(full: number, quick: number): number {
  const forced = Number(process.env.BENCH_ROUNDS);
  if (Number.isInteger(forced) && forced > 0) return forced;
  return QUICK ? quick : full;
}

/** The value at quantile `q` (0..1) of `values`, nearest rank. */
export function percentile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: readonly number[]): number {
  return percentile(values, 0.5);
}

/** Milliseconds since `start` (a `performance.now()` reading). */
export function since(start: number): number {
  return performance.now() - start;
}

/** A number for a table cell: no decimals from 100 up, one below 100, two below 10. */
export function fmt(value: number): string {
  if (!Number.isFinite(value)) return '-';
  const abs = Math.abs(value);
  return value.toFixed(abs >= 100 ? 0 : abs >= 10 ? 1 : 2);
}

/** `value / base` as `1.23x`. */
export function ratio(value: number, base: number): string {
  return Number.isFinite(value) && base > 0 ? `${(value / base).toFixed(2)}x` : '-';
}

/** Prints rows as a Markdown table (so a run's output pastes into docs/benchmarks.md as it is). */
export function printTable(
  title: string,
  header: readonly string[],
  rows: readonly (readonly string[])[],
): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(`\n${title}\n`);
  console.log(line(header));
  console.log(
    `|${widths.map((w, i) => (i === 0 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

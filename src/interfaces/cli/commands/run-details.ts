import type { RunRecord } from '../../../application/runs/run-record.ts';
import type { RunEvent } from '../../../domain/run-events.ts';
import { formatPayload } from '../payload-format.ts';

/** A run as `fabric runs` prints it (its JSON shape is stable): the record without where it was read. */
export type ListedRun = Omit<RunRecord, 'usage' | 'runlog' | 'torn' | 'live' | 'source'>;

/** How long the run took, from its start to its end; null while it has no end. */
export function durationMs(run: ListedRun): number | null {
  if (run.started_at === null || run.ended_at === null) return null;
  const ms = Date.parse(run.ended_at) - Date.parse(run.started_at);
  return Number.isNaN(ms) ? null : ms;
}

/**
 * One run for a person (`fabric runs show`): what it was, how it went (status, specialist, model,
 * steps, tokens, duration, error) and what it produced, the payload's summary first.
 * `where` is the lines that say where the record came from (runlog, process).
 */
export function runDetails(run: ListedRun, where: readonly [string, string][]): string {
  const duration = durationMs(run);
  const rows: [string, string][] = [
    ['status', run.status],
    ['specialist', run.specialist ?? '?'],
    ['model', run.model === null ? '?' : `${run.model}${run.backend === null ? '' : ` (${run.backend})`}`],
    ['steps', String(run.steps)],
    ['tokens', String(run.total_tokens)],
    [
      'duration',
      duration === null
        ? `${run.status === 'running' ? 'running' : 'no end'} since ${run.started_at ?? '?'}`
        : seconds(duration),
    ],
    ['started', run.started_at ?? '?'],
    ['task', oneLine(run.task ?? '')],
  ];
  if (run.error !== null) rows.push(['error', `${run.error.code}: ${run.error.message}`]);
  rows.push(...where);
  const width = Math.max(...rows.map(([label]) => label.length)) + 1;
  const lines = [run.run_id, ...rows.map(([label, value]) => `  ${`${label}:`.padEnd(width)} ${value}`)];
  if (run.payload !== null) {
    const payload = formatPayload(run.payload).trimEnd().split('\n');
    // A failed run's payload is what the model said it did, which the run's checks did not bear out.
    const label =
      run.status === 'failed'
        ? `the model's unverified claim (the run failed${run.error === null ? '' : ` ${run.error.code}`}):`
        : 'result:';
    lines.push('', label, ...payload.map((line) => `  ${line}`));
  } else if (run.status !== 'running') lines.push('', 'result: none recorded');
  return `${lines.join('\n')}\n`;
}

function seconds(ms: number): string {
  return ms < 60_000
    ? `${(ms / 1000).toFixed(1)} s`
    : `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/**
 * What the pack's finish gate said, one row per verdict (`fabric runs show`): a rejected finish
 * and why (its first line), and the pass that let the run end (the Rust pack's `cargo check`).
 */
export function finishGateRows(events: readonly RunEvent[]): [string, string][] {
  const rows: [string, string][] = [];
  for (const event of events) {
    if (event.kind === 'finish_gate_passed')
      rows.push(['finish gate', `passed at step ${event.step}: ${firstLine(event.message)}`]);
    else if (event.kind === 'finish_rejected' && event.reason === 'gate_failed')
      rows.push(['finish gate', `rejected at step ${event.step}: ${firstLine(event.message)}`]);
  }
  return rows;
}

function firstLine(text: string): string {
  const line = text.split('\n').find((part) => part.trim() !== '') ?? '';
  return oneLine(line);
}

/**
 * A battery as people read it: the matrix (a row per task, a column per model) for the terminal,
 * and the Markdown report (`--report FILE.md`). Pure text; the CLI decides where it goes.
 */
import type { BatterySummary, CellSummary, ModelSummary } from './battery-summary.ts';
import type { BatteryPlan, CellResult } from './battery-types.ts';
import { plural } from '../../domain/words.ts';
import { callsText } from './model-facts.ts';

/** What the matrix shows for cells not ended yet. */
export type LiveState = 'pending' | 'running';

/** What a matrix entry reads of a cell. */
type EntryCell = Pick<CellSummary, 'passed' | 'steps' | 'status' | 'failed_check'> & {
  readonly infrastructure?: boolean | undefined;
};

/** One matrix entry for a task × model (all its repeats); `⚠` marks infrastructure failures. */
function entry(cells: readonly EntryCell[], live: LiveState | undefined): string {
  if (cells.length === 0) return live === 'running' ? '…' : '·';
  if (cells.length === 1) {
    const [cell] = cells as [EntryCell];
    if (cell.passed) return `✓ ${cell.steps} st`;
    if (cell.infrastructure === true) return '⚠ infra';
    if (cell.status === 'not_run') return '– not run';
    return `✗ ${shortCheck(cell.failed_check)}`;
  }
  const counted = cells.filter((cell) => cell.infrastructure !== true);
  const passed = counted.filter((cell) => cell.passed).length;
  const infra = cells.length - counted.length;
  return `${passed}/${counted.length} ✓${infra > 0 ? ` ⚠${infra}` : ''}${live === 'running' ? ' …' : ''}`;
}

function shortCheck(check: string | null): string {
  if (check === null) return '';
  return check.replace(/^files_contain: /, 'file ').replace(/^command: /, '');
}

/**
 * The matrix as fixed-width text. `ended` are the cells done so far; `running` marks
 * task × model pairs with a cell in progress.
 */
export function renderMatrix(
  plan: BatteryPlan,
  ended: readonly CellResult[],
  running: ReadonlySet<string> = new Set(),
): string {
  const header = ['task', ...plan.models];
  const rows = plan.tasks.map((task) => [
    task.id,
    ...plan.models.map((model) => {
      const cells = ended.filter((cell) => cell.task === task.id && cell.model === model);
      const live = running.has(pairId(task.id, model)) ? 'running' : undefined;
      const all = plan.repeat;
      const text = entry(cells, live);
      return cells.length > 0 && cells.length < all && all > 1 ? `${text} (${cells.length}/${all})` : text;
    }),
  ]);
  return fixedWidth(header, rows);
}

/** The per-model table as fixed-width text (under the terminal's matrix once the battery ends). */
export function renderModelTable(plan: BatteryPlan, summary: BatterySummary): string {
  return fixedWidth(modelHead(plan.repeat), modelRows(summary.models, plan.repeat));
}

function fixedWidth(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((_, i) => Math.max(...[header, ...rows].map((row) => (row[i] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** The key of a task × model pair in `running`. */
export function pairId(task: string, model: string): string {
  return `${task}\u0000${model}`;
}

/** A share as a whole percentage; `–` for none. */
export function percent(value: number | null): string {
  return value === null ? '–' : `${Math.round(value * 100)}%`;
}

/** The 95% Wilson interval as `35–88%`; `–` when no cell counts. */
export function intervalText(model: Pick<ModelSummary, 'interval'>): string {
  const { interval } = model;
  return interval === null ? '–' : `${Math.round(interval.low * 100)}–${Math.round(interval.high * 100)}%`;
}

/**
 * A model's scores over repeats in one line (SPEC §12.1): pass@1 with its 95% interval, and with
 * more than one repeat pass^k and the flip rate.
 */
export function scoresLine(model: ModelSummary, repeat: number): string {
  const parts = [`pass@1 ${percent(model.pass_at_1)} (95% CI ${intervalText(model)})`];
  if (repeat > 1)
    parts.push(`pass^${repeat} ${percent(model.pass_hat_k)}`, `flip rate ${percent(model.flip_rate)}`);
  return parts.join(' · ');
}

/** The per-model table's head, for `repeat` repeats. */
export function modelHead(repeat: number): string[] {
  return [
    'model',
    'passed',
    '95% CI',
    ...(repeat > 1 ? [`pass^${repeat}`, 'flip rate'] : []),
    'median steps',
    'median time',
    'tokens',
  ];
}

/** The per-model table's rows, for `repeat` repeats (columns as `modelHead`). */
export function modelRows(models: readonly ModelSummary[], repeat: number): string[][] {
  return models.map((m) => [
    m.model,
    `${m.passed}/${m.total} (${percent(m.pass_rate)})`,
    intervalText(m),
    ...(repeat > 1 ? [percent(m.pass_hat_k), percent(m.flip_rate)] : []),
    m.median_steps === null ? '–' : String(m.median_steps),
    m.median_seconds === null ? '–' : `${m.median_seconds} s`,
    String(m.tokens),
  ]);
}

/** The head of the table of how each model worked (SPEC §12.1). */
export const WORK_HEAD = ['model', 'profile', 'window', 'tool calls', 'reasoning tokens', 'empty turns'];

/** The profile as its globs, `–` when none matched. */
export function profileText(model: Pick<ModelSummary, 'profile'>): string {
  return model.profile.length === 0 ? '–' : model.profile.join(', ');
}

/** The windows its runs worked in: one, several (`4096/8192`: not a fair comparison), or `–`. */
export function windowsText(model: Pick<ModelSummary, 'windows'>): string {
  return model.windows.length === 0 ? '–' : model.windows.join('/');
}

/** How each model worked: its profile and window, its calls by dialect, reasoning, empty turns. */
export function workRows(models: readonly ModelSummary[]): string[][] {
  return models.map((m) => [
    m.model,
    profileText(m),
    windowsText(m),
    callsText(m),
    String(m.reasoning_tokens),
    String(m.empty_turns),
  ]);
}

/** The Markdown report: the matrix, per-model scores, and every failure with its check and message. */
export function renderReport(plan: BatteryPlan, summary: BatterySummary): string {
  const cells = summary.cells;
  const table = (head: readonly string[], rows: readonly (readonly string[])[]) =>
    [head, head.map(() => '---'), ...rows].map((row) => `| ${row.map(escapeCell).join(' | ')} |`).join('\n');
  const matrixRows = plan.tasks.map((task) => [
    task.id,
    ...plan.models.map((model) =>
      entry(
        cells.filter((cell) => cell.task === task.id && cell.model === model && cell.error !== 'not run yet'),
        undefined,
      ),
    ),
  ]);
  const failures = cells.filter((cell) => !cell.passed && !cell.infrastructure);
  const infrastructure = cells.filter((cell) => cell.infrastructure);
  // The message's first line is its summary (as the terminal shows it); the lines after it, the
  // detail (a cargo test failure's assertion and output), go below it as they are, not folded
  // into the summary, where they repeated it.
  const failureLines = failures.map((cell) => {
    const [first = '', ...rest] = (cell.error ?? '').split('\n');
    const detail = detailBlock(rest);
    return `- **${cell.task}** × \`${cell.model}\`${plan.repeat > 1 ? ` #${cell.repeat}` : ''}: ${cell.failed_check ?? 'failed'} — ${oneLine(first)}${cell.run_id === null ? '' : ` (run \`${cell.run_id}\`)`}${detail}`;
  });
  const infrastructureLines = infrastructure.map(
    (cell) =>
      `- **${cell.task}** × \`${cell.model}\`${plan.repeat > 1 ? ` #${cell.repeat}` : ''}: ${oneLine((cell.error ?? '').split('\n')[0] ?? '')}${cell.run_id === null ? '' : ` (run \`${cell.run_id}\`)`}`,
  );
  return `# Battery ${summary.name}

Battery id \`${summary.id}\` · specialist \`${plan.specialist}\` · ${plural(plan.tasks.length, 'task')} × ${plural(plan.models.length, 'model')} × ${plural(plan.repeat, 'repeat')}

## Matrix

${table(['task', ...plan.models.map((m) => `\`${m}\``)], matrixRows)}

✓ passed (steps) · ✗ the check that failed · – the cell could not run · ⚠ its infrastructure failed it (not counted)

## Per model

${table(modelHead(plan.repeat), modelRows(summary.models, plan.repeat))}

pass@1: the share of cells passed · 95% CI: its Wilson interval${plan.repeat > 1 ? ` · pass^${plan.repeat}: the share of tasks passed on every repeat · flip rate: the share of tasks whose outcome differs between repeats` : ''}

## How each model worked

${table(WORK_HEAD, workRows(summary.models))}

Profile: the profile globs that matched the model (SPEC §16) · window: the context its runs worked in · tool calls: returned natively, or recovered from text and in which dialect · empty turns: turns with no text and no call (steps lost)

## Failures

${failureLines.length === 0 ? 'None.' : failureLines.join('\n')}
${
  infrastructureLines.length === 0
    ? ''
    : `
## Infrastructure failures

Not counted against the models; \`fabric battery --resume ${summary.id}\` runs these cells again.

${infrastructureLines.join('\n')}
`
}`;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** Lines under a failure, as an indented code block of at most DETAIL_LINES lines; none when empty. */
function detailBlock(lines: readonly string[]): string {
  const kept = lines.map((line) => line.trimEnd());
  while (kept.length > 0 && kept.at(-1) === '') kept.pop();
  while (kept.length > 0 && kept[0] === '') kept.shift();
  if (kept.length === 0) return '';
  const shown = kept.length > DETAIL_LINES ? [...kept.slice(0, DETAIL_LINES), '…'] : kept;
  return `\n\n  \`\`\`\n${shown.map((line) => `  ${line.replaceAll('```', "'''")}`).join('\n')}\n  \`\`\`\n`;
}

const DETAIL_LINES = 40;

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}

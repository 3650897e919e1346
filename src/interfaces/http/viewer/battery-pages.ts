import type { BatterySummary, ModelSummary } from '../../../application/battery/battery-summary.ts';
import {
  intervalText,
  percent,
  profileText,
  windowsText,
} from '../../../application/battery/battery-report.ts';
import { callsText } from '../../../application/battery/model-facts.ts';
import { type CellResult, cellId } from '../../../application/battery/battery-types.ts';
import { type BatteryRecord, batterySummaryOf } from '../../../application/battery/battery-read-model.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, clip, duration, page, refreshRegion } from './layout.ts';
import { plural } from '../../../domain/words.ts';

/** How often a running battery's page asks again: a cell ends every few seconds at best. */
const REFRESH_MS = 2000;

const STATUS_MARKS: Record<BatteryRecord['status'], string> = {
  running: '▶ running',
  done: '✓ done',
  interrupted: '■ interrupted',
};

/** `/batteries`: the batteries of this runs directory, newest first. */
export function batteriesPage(records: readonly BatteryRecord[], nav: Nav): SafeHtml {
  const body =
    records.length === 0
      ? html`<p class="notice">No batteries yet: run one with <code>fabric battery FILE</code> or <code>POST /v1/batteries</code>.</p>`
      : html`<div class="table-wrap"><table>
<caption class="meta">Newest first.</caption>
<thead><tr><th scope="col">Battery</th><th scope="col">Status</th><th scope="col" class="wide">Specialist</th><th scope="col">Cells</th><th scope="col">Passed</th><th scope="col" class="wide">Models</th></tr></thead>
<tbody>${records.map(listRow)}</tbody>
</table></div>`;
  const running = records.some((record) => record.status === 'running');
  return page('Batteries', html`<h1>Batteries</h1>${refreshRegion(running ? REFRESH_MS : null, body)}`, {
    nav,
    current: '/batteries',
  });
}

function listRow(record: BatteryRecord): SafeHtml {
  const { plan } = record;
  const total = plan.tasks.length * plan.models.length * plan.repeat;
  const passed = record.cells.filter((cell) => cell.passed).length;
  return html`<tr data-status="${record.status}">
<td><a class="run-link" href="/batteries/${encodeURIComponent(plan.id)}">${plan.name}</a><span class="task mono">${plan.id}</span></td>
<td><span class="status status-${record.status}">${STATUS_MARKS[record.status]}</span></td>
<td class="wide">${plan.specialist}</td>
<td class="num">${record.cells.length}/${total}</td>
<td class="num">${passed}/${total}</td>
<td class="wide">${plan.models.join(', ')}</td>
</tr>`;
}

/**
 * `/batteries/<id>`: the matrix (a row per task, a column per model, each cell pass or fail
 * with its failing check and figures, linking to its run) and the per-model scores; swapped in
 * place every few seconds while the battery runs.
 */
export function batteryPage(record: BatteryRecord, nav: Nav): SafeHtml {
  const { plan } = record;
  const live = record.status === 'running';
  return page(
    `Battery ${plan.name}`,
    html`<h1>Battery ${plan.name} <span class="mono meta">${plan.id}</span></h1>
${refreshRegion(live ? REFRESH_MS : null, batteryBody(record, batterySummaryOf(record.plan, record.cells, record.status), { links: true }))}`,
    { nav, current: '/batteries' },
  );
}

/**
 * A battery's facts, per-model tables and matrix; `links: false` for a page read away from a
 * server (the HTML report), where a run is named by its id instead of linked. `summary` is the
 * record's (`batterySummaryOf`), computed once by the caller.
 */
export function batteryBody(
  record: BatteryRecord,
  summary: BatterySummary,
  options: { readonly links: boolean },
): SafeHtml {
  const { plan } = record;
  const total = summary.cells.length;
  const live = record.status === 'running';
  const byId = new Map(record.cells.map((cell) => [cellId(cell), cell]));
  return html`<dl class="facts">
<dt>Status</dt><dd id="battery-status"><span class="status status-${record.status}">${STATUS_MARKS[record.status]}</span>${live ? ' — updating live' : ''}</dd>
<dt>Cells</dt><dd>${record.cells.length} of ${total} done · ${record.cells.filter((cell) => cell.passed).length} passed</dd>
<dt>Specialist</dt><dd>${plan.specialist}</dd>
<dt>Repeat</dt><dd>${plan.repeat}</dd>
${record.updatedAt ? html`<dt>Updated</dt><dd>${record.updatedAt}</dd>` : ''}
${record.status === 'interrupted' ? html`<dt>Resume</dt><dd><code>fabric battery --resume ${plan.id}</code> runs the cells not done</dd>` : ''}
</dl>
<h2 id="models-heading">Models</h2>
<div class="table-wrap"><table class="models" aria-labelledby="models-heading">
<thead><tr><th scope="col">Model</th><th scope="col" class="num">Passed</th><th scope="col" class="num">Pass rate</th><th scope="col" class="num"><abbr title="95% Wilson interval of the pass rate">95% CI</abbr></th>${plan.repeat > 1 ? html`<th scope="col" class="num"><abbr title="the share of tasks passed on every repeat">pass^${plan.repeat}</abbr></th><th scope="col" class="num"><abbr title="the share of tasks whose outcome differs between repeats">Flip rate</abbr></th>` : ''}<th scope="col" class="num">Median steps</th><th scope="col" class="num">Median time</th><th scope="col" class="num">Tokens</th></tr></thead>
<tbody>${summary.models.map((model) => modelRow(model, plan.repeat))}</tbody>
</table></div>
<h2 id="work-heading">How each model worked</h2>
<div class="table-wrap"><table class="work" aria-labelledby="work-heading">
<thead><tr><th scope="col">Model</th><th scope="col"><abbr title="the profile globs that matched the model">Profile</abbr></th><th scope="col" class="num"><abbr title="the context window its runs worked in">Window</abbr></th><th scope="col">Tool calls</th><th scope="col" class="num">Reasoning tokens</th><th scope="col" class="num"><abbr title="turns with no text and no call: steps lost">Empty turns</abbr></th></tr></thead>
<tbody>${summary.models.map(workRow)}</tbody>
</table></div>
<h2 id="matrix-heading">Matrix</h2>
<div class="table-wrap"><table class="matrix" aria-labelledby="matrix-heading">
<thead><tr><th scope="col">Task</th>${plan.models.map((model) => html`<th scope="col">${model}</th>`)}</tr></thead>
<tbody>${plan.tasks.map(
    (task) => html`<tr data-task="${task.id}">
<th scope="row"><span class="mono">${task.id}</span><span class="task" title="${task.task}">${clip(task.task, 300)}</span></th>
${plan.models.map((model) => html`<td data-model="${model}">${repeats(record, byId, task.id, model, options.links)}</td>`)}
</tr>`,
  )}</tbody>
</table></div>`;
}

function workRow(model: ModelSummary): SafeHtml {
  const settings = Object.entries(model.profile_settings)
    .map(([key, value]) => `${key}: ${JSON.stringify(value)}`)
    .join(', ');
  return html`<tr data-model="${model.model}"><th scope="row">${model.model}</th>
<td data-figure="profile"${settings ? html` title="${settings}"` : ''}>${profileText(model)}</td>
<td class="num" data-figure="window">${windowsText(model)}</td>
<td data-figure="calls">${callsText(model)}</td>
<td class="num" data-figure="reasoning">${model.reasoning_tokens}</td>
<td class="num" data-figure="empty-turns">${model.empty_turns}</td></tr>`;
}

function modelRow(model: ModelSummary, repeat: number): SafeHtml {
  return html`<tr data-model="${model.model}"><th scope="row">${model.model}</th>
<td class="num">${model.passed}/${model.total}</td>
<td class="num" data-figure="pass-rate">${percent(model.pass_rate)}</td>
<td class="num" data-figure="interval">${intervalText(model)}</td>
${repeat > 1 ? html`<td class="num" data-figure="pass-hat-k">${percent(model.pass_hat_k)}</td><td class="num" data-figure="flip-rate">${percent(model.flip_rate)}</td>` : ''}
<td class="num">${model.median_steps ?? '—'}</td>
<td class="num">${model.median_seconds === null ? '—' : duration(model.median_seconds * 1000)}</td>
<td class="num">${model.tokens}</td></tr>`;
}

/** A matrix cell: one line per repeat. */
function repeats(
  record: BatteryRecord,
  byId: ReadonlyMap<string, CellResult>,
  task: string,
  model: string,
  links: boolean,
): SafeHtml[] {
  const count = record.plan.repeat;
  const lines: SafeHtml[] = [];
  for (let repeat = 1; repeat <= count; repeat++) {
    const id = cellId({ task, model, repeat });
    const prefix = count > 1 ? `#${repeat} ` : '';
    const cell = byId.get(id);
    if (cell !== undefined) lines.push(done(cell, prefix, links));
    else if (record.started.has(id))
      lines.push(html`<div class="cell cell-running">${prefix}<span class="mark">▶ running</span></div>`);
    else
      lines.push(
        html`<div class="cell cell-waiting">${prefix}<span class="mark">${record.status === 'running' ? '… waiting' : '– not run'}</span></div>`,
      );
  }
  return lines;
}

function done(cell: CellResult, prefix: string, links: boolean): SafeHtml {
  const infra = cell.infrastructure === true && !cell.passed;
  const mark = cell.passed
    ? '✓ pass'
    : infra
      ? '⚠ infrastructure'
      : cell.status === 'not_run'
        ? '✗ not run'
        : '✗ fail';
  const label =
    cell.run_id === null
      ? mark
      : links
        ? html`<a href="/runs/${encodeURIComponent(cell.run_id)}">${mark}</a>`
        : html`${mark} <span class="mono meta">${cell.run_id}</span>`;
  const figures =
    cell.run_id === null
      ? ''
      : `${cell.passed ? '' : `${cell.status} · `}${plural(cell.steps, 'step')} · ${plural(cell.tokens, 'token')} · ${cell.seconds.toFixed(1)} s`;
  return html`<div class="cell ${cell.passed ? 'cell-pass' : infra ? 'cell-infra' : 'cell-fail'}"${infra ? html` title="Not counted against the model; --resume runs it again"` : ''}>${prefix}<span class="mark">${label}</span>
${cell.failed_check === null ? '' : html` <span class="check">${cell.failed_check}</span>`}
${figures ? html`<span class="meta figures">${figures}</span>` : ''}
${details(cell)}</div>`;
}

const CHECK_MARKS = { passed: '✓', failed: '✗', skipped: '–' } as const;

/** Why a cell failed, and each of its checks with its outcome; nothing for a clean pass. */
function details(cell: CellResult): SafeHtml | string {
  const checks = cell.checks ?? [];
  if (cell.error === null && !checks.some((check) => check.outcome !== 'passed')) return '';
  return html`<details data-key="${cellId(cell)}"><summary>${cell.passed ? 'Checks' : 'Why'}</summary>
${cell.error === null ? '' : html`<pre>${clip(cell.error, 4000)}</pre>`}
${
  checks.length === 0
    ? ''
    : html`<ul class="checks">${checks.map(
        (check) =>
          html`<li>${CHECK_MARKS[check.outcome]} <span class="check">${check.check}</span>${check.message ? html` <span class="meta">${clip(check.message, 500)}</span>` : ''}</li>`,
      )}</ul>`
}</details>`;
}

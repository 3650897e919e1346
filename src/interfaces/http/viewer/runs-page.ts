import type { RunSummaryStatus } from '../../../application/runs/run-summary.ts';
import type { RunView } from '../run-view.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, duration, elapsed, page, statusBadge } from './layout.ts';
import type { RunPage, RunQuery } from './run-index.ts';

/** The statuses a run can be listed with, in the order the filter offers them. */
export const LIST_STATUSES: readonly RunSummaryStatus[] = [
  'running',
  'awaiting_approval',
  'succeeded',
  'failed',
  'max_steps',
  'cancelled',
  'interrupted',
];

/** `GET /`: the runs, newest first, with the status and specialist filters and the pager. */
export function runsPage(
  result: RunPage,
  query: RunQuery,
  options: { readonly specialists: readonly string[]; readonly nav: Nav; readonly now: Date },
): SafeHtml {
  const option = (value: string, chosen: string | undefined, label = value) =>
    html`<option value="${value}"${value === (chosen ?? '') ? ' selected' : ''}>${label}</option>`;
  const filters = html`<form class="filters" method="get" action="/" role="search" aria-label="Filter runs">
<label>Status <select name="status" id="filter-status">${option('', query.status, 'any')}${LIST_STATUSES.map((status) => option(status, query.status))}</select></label>
<label>Specialist <select name="specialist" id="filter-specialist">${option('', query.specialist, 'any')}${options.specialists.map((name) => option(name, query.specialist))}</select></label>
<button type="submit">Filter</button>
</form>`;
  const rows = result.runs.map((run) => runRow(run, options.now));
  const empty = result.runs.length === 0;
  // The table is there even when empty, so the page's script can add the runs that start later.
  const table = html`<p class="notice" id="runs-none"${empty ? '' : html` hidden`}>No runs${
    query.status || query.specialist
      ? ' match these filters'
      : html` yet: start one with <code>fabric run</code> or <code>POST /v1/runs</code>`
  }.</p>
<div class="table-wrap" id="runs-list"${empty ? html` hidden` : ''} data-status="${query.status ?? ''}" data-specialist="${query.specialist ?? ''}" data-newest="${String(query.before === undefined)}"><table>
<caption class="meta">Newest first${query.before ? ' (older page)' : ', updated live'}. Keys: j/k move between runs, Enter opens one.</caption>
<thead><tr><th scope="col">Run</th><th scope="col">Status</th><th scope="col">Specialist</th><th scope="col" class="wide">Model</th><th scope="col">Steps</th><th scope="col" class="wide">Duration</th><th scope="col" class="wide">Tokens</th></tr></thead>
<tbody id="runs-rows">${rows}</tbody>
</table></div>`;
  const filterParams = new URLSearchParams();
  if (query.status) filterParams.set('status', query.status);
  if (query.specialist) filterParams.set('specialist', query.specialist);
  const last = result.runs.at(-1);
  const older = new URLSearchParams(filterParams);
  if (last) older.set('before', last.run_id);
  const pager = html`<nav class="pager" aria-label="Pages">${
    query.before ? html`<a href="/?${filterParams.toString()}">← Newest</a>` : ''
  }${result.more ? html`<a href="/?${older.toString()}" rel="next">Older runs →</a>` : ''}</nav>`;
  return page('Runs', html`<h1>Runs</h1>${filters}${table}${pager}`, { nav: options.nav, current: '/' });
}

/** One run's row; the list's stream sends rows like it as runs start and go on. */
export function runRow(run: RunView, now: Date): SafeHtml {
  const href = `/runs/${encodeURIComponent(run.run_id)}`;
  const started = run.started_at === null ? null : Date.parse(run.started_at);
  const ended = run.ended_at === null ? now.getTime() : Date.parse(run.ended_at);
  const took = started === null ? null : ended - started;
  return html`<tr data-run-id="${run.run_id}" data-status="${run.status}" data-specialist="${run.specialist ?? ''}">
<td><a class="run-link mono" href="${href}">${run.run_id}</a><span class="task" title="${run.task ?? ''}">${run.task ?? ''}</span></td>
<td>${statusBadge(run.status)}</td>
<td>${run.specialist ?? '—'}</td>
<td class="wide">${run.model ?? '—'}</td>
<td class="num">${run.steps}</td>
${
  run.ended_at === null && run.status === 'running' && took !== null
    ? html`<td class="num wide" data-elapsed-ms="${String(took)}">${elapsed(took)}</td>`
    : html`<td class="num wide">${duration(took)}</td>`
}
<td class="num wide">${run.total_tokens}</td>
</tr>`;
}

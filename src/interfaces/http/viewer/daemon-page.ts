import type {
  DaemonStatus,
  DaemonTaskFigures,
  DaemonTaskView,
} from '../../../application/daemon/daemon-status.ts';
import type { DaemonTaskStatus } from '../../../application/daemon/daemon-state.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, clip, duration, page, refreshRegion } from './layout.ts';
import { plural } from '../../../domain/words.ts';

/** A repository's daemon status, or why it could not be read (moved, openspec/ removed). */
export type DaemonEntry = DaemonStatus | { readonly repo: string; readonly error: string };

/** How often the page asks again: a task takes minutes, a backoff seconds. */
const REFRESH_MS = 5000;

/** A status as a mark and a word, so it does not rest on colour. */
const MARKS: Record<DaemonTaskStatus, string> = {
  done: '✓ done',
  blocked: '✗ blocked',
  running: '▶ running',
  pending: '… pending',
  awaiting_approval: '? awaiting approval',
};

/**
 * `/daemon`: for every repository a daemon has worked on with this runs directory (SPEC §11),
 * its changes and their tasks, the attempts' figures and the backend's health; or, when there
 * is none, how to start one. Refreshed in place every few seconds.
 */
export function daemonPage(entries: readonly DaemonEntry[], runsDir: string, nav: Nav): SafeHtml {
  const body =
    entries.length === 0
      ? html`<p class="notice">No daemon has worked with this runs directory (<code>${runsDir}</code>) yet.
Start one in a git work tree that holds <code>openspec/changes/</code>: <code>fabric daemon --repo DIR</code>
(<code>--once</code> works through what is pending and exits). This page shows it as soon as it has begun.</p>`
      : entries.map((entry) => ('error' in entry ? unreadable(entry) : repository(entry)));
  return page('Daemon', html`<h1>Daemon</h1>${refreshRegion(REFRESH_MS, body)}`, { nav, current: '/daemon' });
}

function unreadable(entry: { readonly repo: string; readonly error: string }): SafeHtml {
  return html`<section class="repo"><h2 class="mono">${entry.repo}</h2><p class="notice" role="alert">✗ ${entry.error}</p></section>`;
}

function repository(status: DaemonStatus): SafeHtml {
  const { daemon, stats, backend } = status;
  const figures = new Map(stats.tasks.map((task) => [`${task.change}\n${task.id}`, task]));
  return html`<section class="repo" aria-label="${status.repo}">
<h2 class="mono">${status.repo}</h2>
<dl class="facts">
<dt>Daemon</dt><dd>${daemon.running ? `▶ running (pid ${daemon.pid ?? '?'})` : '■ not running'}${daemon.updated_at ? html` <span class="meta">state of ${daemon.updated_at}</span>` : ''}</dd>
<dt>Backend</dt><dd class="backend-${backend.state}">${backend.state === 'up' ? '✓ up' : backend.state === 'down' ? '✗ down' : '? unknown'}${backend.failures > 0 ? ` · ${backend.failures} failures` : ''}${backend.backoff_s > 0 ? ` · backing off ${backend.backoff_s} s` : ''}${backend.last_ok ? html` <span class="meta">last ok ${backend.last_ok}</span>` : ''}</dd>
${backend.last_error ? html`<dt>Backend error</dt><dd>${clip(backend.last_error, 500)}</dd>` : ''}
<dt>Attempts</dt><dd>${stats.attempts} · ${plural(stats.succeeded, 'task')} succeeded</dd>
<dt>Success rate</dt><dd>${percent(stats.success_rate)} of attempts · ${percent(stats.first_attempt_success_rate)} at the first attempt</dd>
${stats.models.length === 0 ? '' : html`<dt>Per model</dt><dd><ul class="models">${stats.models.map((m) => html`<li><span class="mono">${m.model}</span>: ${percent(m.success_rate)} of ${plural(m.attempts, 'attempt')} · ${plural(m.succeeded, 'task')} done</li>`)}</ul></dd>`}
<dt>Per task</dt><dd>${stats.seconds_per_task === null ? '—' : duration(stats.seconds_per_task * 1000)} · ${stats.tokens_per_task === null ? '—' : `${Math.round(stats.tokens_per_task)} tokens`}</dd>
</dl>
${status.changes.map((change) => {
  const counts = `${change.done} done · ${change.pending} pending · ${change.blocked} blocked${
    change.awaiting_approval === 0 ? '' : ` · ${change.awaiting_approval} awaiting approval`
  }`;
  return html`<h3><span class="mono">${change.id}</span> <span class="meta">${counts}</span></h3>
${
  change.error === undefined
    ? html`<div class="table-wrap"><table class="daemon-tasks">
<thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th><th scope="col">Runs</th><th scope="col">Commit</th><th scope="col" class="wide">Figures</th></tr></thead>
<tbody>${change.tasks.map((task) => taskRow(task, figures.get(`${task.change}\n${task.id}`)))}</tbody>
</table></div>`
    : html`<p class="notice" role="alert">✗ ${change.error}</p>`
}`;
})}
</section>`;
}

function taskRow(task: DaemonTaskView, figures: DaemonTaskFigures | undefined): SafeHtml {
  const ids = task.approval === undefined ? task.run_ids : [...task.run_ids, task.approval.run_id];
  const runs = ids.map(
    (id, i) => html`${i === 0 ? '' : ' '}<a class="mono" href="/runs/${encodeURIComponent(id)}">${id}</a>`,
  );
  // A parked run's approval, answered on the run's page (or the approvals list).
  const waits =
    task.approval === undefined
      ? ''
      : html`<p class="meta">waits for approval of <code>${task.approval.call}</code>: <a href="/runs/${encodeURIComponent(task.approval.run_id)}">answer it on the run's page</a> or in <a href="/approvals">Approvals</a></p>`;
  const diagnostics =
    task.status === 'blocked' && figures?.diagnostics
      ? html`<details data-key="${task.change}/${task.id}"><summary>Last diagnostics</summary><pre>${clip(figures.diagnostics, 8000)}</pre></details>`
      : '';
  return html`<tr data-task="${task.id}" data-status="${task.status}">
<th scope="row"><span class="mono">${task.id}</span> ${task.text}${diagnostics}${waits}</th>
<td><span class="status status-${task.status}">${MARKS[task.status]}</span></td>
<td class="num">${task.attempts}</td>
<td>${runs.length === 0 ? '—' : runs}</td>
<td class="mono">${task.commit === null ? '—' : task.commit.slice(0, 12)}</td>
<td class="wide">${figures === undefined ? '' : figureText(figures)}</td>
</tr>`;
}

function figureText(figures: DaemonTaskFigures): string {
  const parts: string[] = [];
  if (figures.seconds !== null) parts.push(duration(figures.seconds * 1000));
  parts.push(plural(figures.tokens, 'token'));
  if (figures.files_changed !== null)
    parts.push(`${figures.files_changed} ${figures.files_changed === 1 ? 'file' : 'files'}`);
  if (figures.lines_added !== null || figures.lines_removed !== null)
    parts.push(`+${figures.lines_added ?? 0} −${figures.lines_removed ?? 0}`);
  if (figures.tests_passed !== null) parts.push(`${plural(figures.tests_passed, 'test')} passed`);
  const count = (n: number | null) => (n === null ? '—' : String(n));
  if (figures.clippy_before !== null || figures.clippy_after !== null)
    parts.push(`clippy warnings ${count(figures.clippy_before)} → ${count(figures.clippy_after)}`);
  if (figures.clippy_note !== null) parts.push(`clippy: ${figures.clippy_note}`);
  if (figures.preexisting_failures.length > 0)
    parts.push(`pre-existing failures (red at HEAD): ${figures.preexisting_failures.join(', ')}`);
  if (figures.flaky_tests.length > 0) parts.push(`flaky: ${figures.flaky_tests.join(', ')}`);
  return parts.join(' · ');
}

function percent(rate: number | null): string {
  return rate === null ? '—' : `${Math.round(rate * 100)}%`;
}

import type { Timeline } from '../../../application/replay/replay-timeline.ts';
import type { ApprovalRecord } from '../../../domain/approvals.ts';
import type { RunEvent } from '../../../domain/run-events.ts';
import type { RunView } from '../run-view.ts';
import { approvalResultLine, approvalsRegion } from './approvals-page.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, duration, elapsed, page, statusBadge } from './layout.ts';
import { steerControls } from './steer-controls.ts';
import { timelineItems } from './timeline.ts';

/**
 * `/runs/<id>`: the run's facts and links, its approvals (the pending ones to answer), the
 * controls of a running run, and its timeline; live when the run goes on.
 */
export function runPage(
  view: RunView,
  events: readonly RunEvent[],
  approvals: readonly ApprovalRecord[],
  nav: Nav,
): SafeHtml {
  const live = view.status === 'running';
  const pending = approvals.some((record) => record.state === 'pending');
  return page(
    `Run ${view.run_id}`,
    html`<h1>Run <span class="mono">${view.run_id}</span></h1>
${summary(view, live, pending, resumerOf(events))}
${approvalResultLine()}
${approvalsRegion(approvals, { showRun: false })}
${steerControls(view)}
<h2 id="timeline-heading">Timeline</h2>
<ol id="timeline" class="timeline" aria-labelledby="timeline-heading">
${timelineItems(events)}</ol>`,
    {
      nav,
      main: {
        'data-run-id': view.run_id,
        'data-live': String(live),
        'data-last-seq': String(events.at(-1)?.seq ?? 0),
      },
    },
  );
}

/**
 * What the page's script asks for as the run goes on (`/runs/<id>/after/<seq>`): the summary
 * and the approvals again, and the timeline items after `seq`. Parsed by the script, never
 * shown on its own.
 */
export function runFragment(
  view: RunView,
  events: readonly RunEvent[],
  approvals: readonly ApprovalRecord[],
  afterSeq: number,
): SafeHtml {
  const live = view.status === 'running';
  const last = Math.max(afterSeq, events.at(-1)?.seq ?? 0);
  const pending = approvals.some((record) => record.state === 'pending');
  return html`<!doctype html><html lang="en"><body><div id="fragment" data-last-seq="${String(last)}" data-live="${String(live)}">
${summary(view, live, pending, resumerOf(events))}
${approvalsRegion(approvals, { showRun: false })}
<ol id="timeline">${timelineItems(events, afterSeq)}</ol>
</div></body></html>`;
}

/** Who alone resumes the run (`run_start.resumer`: the OpenSpec daemon), when anyone does. */
function resumerOf(events: readonly RunEvent[]): string | undefined {
  const start = events.find((event) => event.kind === 'run_start');
  return start?.kind === 'run_start' ? start.resumer : undefined;
}

function summary(
  view: RunView,
  live: boolean,
  pendingApprovals: boolean,
  resumer: string | undefined,
): SafeHtml {
  const id = encodeURIComponent(view.run_id);
  const took =
    view.started_at === null
      ? null
      : (view.ended_at === null ? Date.now() : Date.parse(view.ended_at)) - Date.parse(view.started_at);
  return html`<section id="run-summary" aria-live="polite" aria-label="Run summary">
<dl class="facts">
<dt>Status</dt><dd id="run-status">${statusBadge(view.status)}${live ? ' — updating live' : ''}</dd>
<dt>Task</dt><dd>${view.task ?? '—'}</dd>
<dt>Specialist</dt><dd>${view.specialist ?? '—'}</dd>
<dt>Model</dt><dd>${view.model ?? '—'} <span class="meta">${view.backend ?? ''}</span></dd>
<dt>Steps</dt><dd id="run-steps">${view.steps}</dd>
<dt>Tokens</dt><dd id="run-tokens">${view.total_tokens}${live ? ' so far' : ''}</dd>
<dt>Duration</dt>${
    view.ended_at !== null || !live || took === null
      ? html`<dd id="run-duration">${view.ended_at === null ? '—' : duration(took)}</dd>`
      : html`<dd id="run-duration" data-elapsed-ms="${String(took)}">${elapsed(took)}</dd>`
  }
${view.error ? html`<dt>Error</dt><dd>${view.error.code}: ${view.error.message}</dd>` : ''}
${view.torn ? html`<dt>Runlog</dt><dd>its last line was cut short (a killed process)</dd>` : ''}
</dl>
<p class="links"><a href="/v1/runs/${id}/runlog" download>Download the runlog</a> <a href="/runs/${id}/replay">Replay (timeline)</a></p>
${
  view.status === 'awaiting_approval' && pendingApprovals
    ? html`<p class="notice" id="awaiting-approval">This run waits for a person's answer to the approval below; it goes on once every approval it asked for is answered.</p>`
    : ''
}
${
  !resumable(view, pendingApprovals)
    ? ''
    : resumer === 'daemon'
      ? html`<p class="notice" id="daemon-resumes">The OpenSpec daemon that started this run goes on with it once its approvals are answered: it set the run's edits aside, and brings them back itself.</p>`
      : resumeForm(view)
}</section>`;
}

/**
 * Ended runs that `fabric resume` may go on with (SPEC §18): stopped, cancelled, out of steps or
 * failed, or parked on approvals that all have their answers. The server decides for certain;
 * its refusal, with the reason, shows under the button.
 */
function resumable(view: RunView, pendingApprovals: boolean): boolean {
  if (view.status === 'awaiting_approval') return !pendingApprovals;
  return ['interrupted', 'cancelled', 'max_steps', 'failed'].includes(view.status);
}

/** The Resume button; more steps asked for where the run used its own. */
function resumeForm(view: RunView): SafeHtml {
  return html`<form id="resume-form" class="actions" data-run-id="${view.run_id}">
<label>More steps <input id="resume-steps" name="max_steps" type="number" min="1" max="1000" ${view.status === 'max_steps' ? html`required value="5"` : ''}></label>
<button id="resume-button" type="submit">Resume</button>
<span id="resume-message" role="status"></span>
</form>
`;
}

/** `/runs/<id>/replay`: the replay timeline, as `fabric replay` prints it, and how to re-execute. */
export function replayPage(view: RunView, timeline: Timeline, nav: Nav): SafeHtml {
  const items = timeline.entries.map(
    (entry) =>
      html`<li class="${entry.tone === 'error' ? 'bad' : entry.tone === 'warn' ? 'warn' : entry.tone === 'ok' ? 'good' : ''}"><span class="meta mono">+${duration(entry.offset_ms)}${entry.step === null ? '' : ` · step ${entry.step}`}</span> ${entry.text}</li>\n`,
  );
  return page(
    `Replay ${view.run_id}`,
    html`<h1>Replay of <a class="mono" href="/runs/${encodeURIComponent(view.run_id)}">${view.run_id}</a></h1>
<p>To re-run the recorded model turns with real tools and compare their results: <code>fabric replay ${view.run_id} --execute</code> (or <code>POST /v1/runs/${view.run_id}/replay</code> with <code>{"execute": true}</code>).</p>
<ol class="timeline">${items}</ol>`,
    { nav },
  );
}

/** A page that says what is wrong (not found, unreadable runlog), with its status. */
export function problemPage(title: string, message: string, nav: Nav): SafeHtml {
  return page(title, html`<h1>${title}</h1><p class="notice">${message}</p><p><a href="/">All runs</a></p>`, {
    nav,
  });
}

/** The token form, for a server that has one, when the request carried neither header nor cookie. */
export function loginPage(next: string, wrong: boolean, nav: Nav): SafeHtml {
  return page(
    'Sign in',
    html`<h1>This server needs its API token</h1>
${wrong ? html`<p class="notice" role="alert">That token is not this server's.</p>` : ''}
<form method="post" action="/login">
<input type="hidden" name="next" value="${next}">
<p><label for="token">Token (<code>FABRIC_API_TOKEN</code>)</label><br>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus></p>
<p><button type="submit">Open the viewer</button></p>
</form>
<p class="meta">The browser keeps it as a cookie for this server only. <code>/?token=…</code> works too.</p>`,
    { nav },
  );
}

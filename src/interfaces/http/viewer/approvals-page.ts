/**
 * The viewer's approvals (SPEC §19): each pending approval as a card with the exact call, the
 * rule that asks, the patterns a lasting answer may use (with what each matches and what not),
 * the scope and a message, and Approve / Deny (`POST /v1/approvals/<id>`, the viewer's action).
 * On a run's page with the run's answered ones below; on `/approvals` for every run. Argv,
 * rules and messages are model or user text: only ever through `html`.
 */
import type { ApprovalRecord } from '../../../domain/approvals.ts';
import { showArgv, showText } from '../../../domain/show-argv.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, page } from './layout.ts';

/** What the scope select offers, as a person reads it. */
const SCOPES = [
  { value: 'once', label: 'once (this call only)' },
  { value: 'run', label: 'this run (the pattern, for the rest of the run)' },
  { value: 'specialist', label: 'this specialist (the pattern, every run, until revoked)' },
] as const;

/**
 * The region the page's script swaps after an answer (`#approvals`), with the status line the
 * answer's result shows in kept outside it.
 */
export function approvalsRegion(
  records: readonly ApprovalRecord[],
  options: {
    /** Each card links to its run (the list of every run's approvals). */
    readonly showRun: boolean;
    /** Say so when nothing waits (the list's page; a run's page says nothing then). */
    readonly sayNone?: boolean;
  },
) {
  const pending = records.filter((record) => record.state === 'pending');
  const answered = records.filter((record) => record.state !== 'pending');
  return html`<div id="approvals" data-pending="${String(pending.length)}">
${
  options.sayNone === true && pending.length === 0
    ? html`<p class="notice" id="approvals-none">No approval waits for an answer.</p>`
    : ''
}
${pending.length === 0 ? '' : html`<h2 id="approvals-heading">Waiting for your answer</h2>`}
${pending.map((record) => approvalCard(record, options.showRun))}
${
  answered.length === 0
    ? ''
    : html`<h2>Answered approvals</h2><ul class="answered" id="approvals-answered">${answered.map(answeredItem)}</ul>`
}</div>`;
}

/** The line the answer's result is said on; outside `#approvals`, so a swap keeps it. */
export function approvalResultLine(): SafeHtml {
  return html`<p id="approval-result" class="result" role="status" aria-live="polite"></p>`;
}

/** `/approvals`: the pending approvals of every run, newest first. */
export function approvalsPage(records: readonly ApprovalRecord[], nav: Nav): SafeHtml {
  return page(
    'Approvals',
    html`<h1>Approvals</h1>
<p class="meta">Calls a policy <code>ask</code> rule holds until a person answers (also <code>fabric approvals list</code>). <a href="/approvals">Refresh</a></p>
${approvalResultLine()}
${approvalsRegion(records, { showRun: true, sayNone: true })}`,
    { nav, current: '/approvals' },
  );
}

/** One pending approval: what is asked and the form that answers it. */
export function approvalCard(record: ApprovalRecord, showRun: boolean): SafeHtml {
  const runHref = `/runs/${encodeURIComponent(record.run_id)}`;
  const group = `pattern-${record.id}`;
  const patterns = record.proposals.map(
    (
      proposal,
      i,
    ) => html`<div class="pattern"><label><input type="radio" name="${group}" value="${String(i)}"${i === 0 ? html` checked` : ''}> <code>${proposal.label}</code>${proposal.exact ? html` <span class="meta">(exact)</span>` : ''}</label>
<div class="meta">Matches ${proposal.matches}. Does not match ${proposal.does_not_match}.</div></div>`,
  );
  return html`<article class="approval" id="approval-${record.id}" data-approval-id="${record.id}" aria-labelledby="approval-title-${record.id}">
<h3 id="approval-title-${record.id}">${record.tool} <span class="meta mono">${record.id}</span></h3>
<dl class="facts">
${showRun ? html`<dt>Run</dt><dd><a class="mono" href="${runHref}">${record.run_id}</a></dd>` : ''}
<dt>Specialist</dt><dd>${record.specialist} <span class="meta">step ${String(record.step)}</span></dd>
<dt>Call</dt><dd>${callShown(record)}</dd>
<dt>Rule</dt><dd>${record.rule}</dd>
<dt>Asked</dt><dd>${record.requested_at}${record.expires_at === undefined ? '' : html` <span class="meta">expires ${record.expires_at}</span>`}</dd>
</dl>
<form class="approval-form actions" data-approval-id="${record.id}">
<fieldset><legend>What a lasting answer allows</legend>
${patterns}</fieldset>
<p><label>Scope <select name="scope">${SCOPES.map((scope) => html`<option value="${scope.value}">${scope.label}</option>`)}</select></label></p>
<p><label>Message to the model (optional)<br><textarea name="message" rows="2" cols="60" maxlength="4000"></textarea></label></p>
<p><button type="submit" name="decision" value="approve" class="approve">Approve</button> <button type="submit" name="decision" value="deny" class="deny">Deny</button>
<span class="approval-status" role="status"></span></p>
</form>
</article>
`;
}

/** An answered approval, as one line: the call, the answer, through which channel. */
function answeredItem(record: ApprovalRecord): SafeHtml {
  const answer = record.answer;
  return html`<li class="answered-${record.state}" data-approval-id="${record.id}"><span class="status status-${record.state}">${record.state}</span> ${callShown(record)} <span class="meta mono">${record.id}</span>${
    answer === undefined
      ? ''
      : html` <span class="meta">via ${answer.channel}${answer.by === undefined ? '' : ` (${answer.by})`} · ${answer.scope} · ${answer.at}</span>${
          answer.message === undefined ? '' : html`<pre>${answer.message}</pre>`
        }`
  }</li>`;
}

/**
 * The call exactly: the argv shell-quoted with control and invisible characters escaped (a bidi
 * override would reorder the words on the page), or the tool and its path.
 */
function callShown(record: ApprovalRecord): SafeHtml {
  if (record.argv !== undefined) return html`<code class="argv">${showArgv(record.argv)}</code>`;
  if (record.path !== undefined)
    return html`<code>${record.tool}</code> on <code class="path">${showText(record.path)}</code>`;
  return html`<code>${record.tool}</code> <span class="meta">${record.arguments}</span>`;
}

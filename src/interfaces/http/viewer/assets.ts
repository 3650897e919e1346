/**
 * The viewer's stylesheet and its one script, served by the server itself (`/viewer/…`): no
 * build step, no CDN. Kept as strings in a module so the compiled package carries them with
 * the code. The script only inserts markup the server rendered (and escaped).
 */
import { ACTIONS_JS } from './actions-js.ts';

/** `/viewer/style.css`: light and dark (prefers-color-scheme), readable at phone width, visible focus. */
export const STYLE_CSS = `
:root { color-scheme: light dark; --bg: #fff; --fg: #1b1f24; --muted: #57606a; --line: #d0d7de;
  --panel: #f6f8fa; --link: #0550ae; --add-bg: #dafbe1; --add-fg: #116329; --del-bg: #ffebe9;
  --del-fg: #a40e26; --warn: #7d4e00; --bad: #a40e26; --good: #116329; --focus: #0969da; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #0d1117; --fg: #e6edf3; --muted: #9198a1; --line: #3d444d; --panel: #161b22;
    --link: #4493f8; --add-bg: #12361f; --add-fg: #7ee2a8; --del-bg: #3c1618; --del-fg: #ffa198;
    --warn: #e3b341; --bad: #ff7b72; --good: #56d364; --focus: #4493f8; }
}
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; }
a { color: var(--link); }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.skip { position: absolute; left: -999px; top: 0; background: var(--panel); padding: .5em 1em; }
.skip:focus { left: .5em; z-index: 2; }
header { border-bottom: 1px solid var(--line); padding: .5em 1em; display: flex; gap: 1em;
  align-items: baseline; flex-wrap: wrap; }
header .brand { font-weight: 600; }
main { padding: 1em; max-width: 72rem; margin: 0 auto; }
main:focus { outline: none; }
h1 { font-size: 1.3em; margin: .2em 0 .6em; overflow-wrap: anywhere; }
code, pre, .mono { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { margin: .3em 0; padding: .5em .7em; background: var(--panel); border: 1px solid var(--line);
  border-radius: 6px; overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
form.filters { display: flex; flex-wrap: wrap; gap: .6em 1em; align-items: end; margin-bottom: 1em; }
form.filters label { display: flex; flex-direction: column; font-size: .9em; color: var(--muted); }
select, input, button { font: inherit; color: inherit; background: var(--bg);
  border: 1px solid var(--line); border-radius: 6px; padding: .3em .5em; }
button { cursor: pointer; background: var(--panel); }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .4em .6em; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-size: .85em; color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td .task { display: block; color: var(--muted); font-size: .9em; max-width: 40ch;
  overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.status { font-weight: 600; white-space: nowrap; }
.status-succeeded { color: var(--good); }
.status-failed, .status-interrupted { color: var(--bad); }
.status-max_steps, .status-cancelled, .status-running, .status-awaiting_approval { color: var(--warn); }
.status-approved { color: var(--good); }
.status-denied, .status-expired { color: var(--bad); }
article.approval { border: 1px solid var(--line); border-radius: 6px; padding: .6em .9em; margin: 0 0 1em; }
article.approval fieldset { border: 1px solid var(--line); border-radius: 6px; margin: .4em 0; }
.pattern { margin: .2em 0 .5em; }
textarea { font: inherit; color: inherit; background: var(--bg); border: 1px solid var(--line);
  border-radius: 6px; padding: .3em .5em; max-width: 100%; }
ul.answered { padding-left: 1.2em; }
.result:empty { display: none; }
.result { font-weight: 600; }
.pager { display: flex; gap: 1em; margin-top: 1em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; margin: 0 0 1em; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.links { display: flex; gap: 1em; flex-wrap: wrap; margin: .5em 0 1em; }
ol.timeline { list-style: none; padding: 0; margin: 0; }
ol.timeline > li { border-left: 3px solid var(--line); padding: .3em 0 .3em .8em; margin: 0 0 .4em; }
ol.timeline > li.step { border-left-color: var(--focus); margin-top: 1em; font-weight: 600; }
ol.timeline > li.bad { border-left-color: var(--bad); }
ol.timeline > li.warn { border-left-color: var(--warn); }
ol.timeline > li.good { border-left-color: var(--good); }
.kind { font-weight: 600; }
.meta { color: var(--muted); font-size: .9em; }
pre.diff { padding: .4em 0; }
pre.diff span { display: block; padding: 0 .7em; }
pre.diff .add { background: var(--add-bg); color: var(--add-fg); }
pre.diff .del { background: var(--del-bg); color: var(--del-fg); }
pre.diff .hunk { color: var(--muted); }
pre.diff .file { font-weight: 600; }
details > summary { cursor: pointer; color: var(--muted); }
dl.args-inline { display: flex; flex-wrap: wrap; gap: .1em 1.2em; margin: .3em 0; }
dl.args-inline > div { display: flex; gap: .4em; min-width: 0; }
dl.args-inline dt { color: var(--muted); }
dl.args-inline dt::after { content: ":"; }
dl.args-inline dd { margin: 0; overflow-wrap: anywhere; }
.arg-block { margin: .3em 0; }
.arg-name { color: var(--muted); }
details.args-raw { margin: .2em 0; }
.notice { padding: .6em .8em; border: 1px solid var(--line); background: var(--panel); border-radius: 6px; }
header nav a[aria-current=page] { font-weight: 600; text-decoration: none; }
tbody th { font-size: 1em; color: var(--fg); font-weight: normal; }
th .task { display: block; color: var(--muted); font-size: .9em; max-width: 40ch; }
h2 { font-size: 1.1em; margin: 1.2em 0 .5em; }
h3 { font-size: 1em; margin: 1em 0 .4em; }
.status-done { color: var(--good); }
.status-blocked { color: var(--bad); }
.status-pending { color: var(--muted); }
section.repo { margin-bottom: 2em; }
table.matrix td { min-width: 10rem; }
.cell { padding: .15em 0; }
.cell .mark { font-weight: 600; white-space: nowrap; }
.cell-pass .mark, .cell-pass .mark a { color: var(--good); }
.probe-pass { color: var(--good); }
.probe-fail, .probe-error, .probe-timeout { color: var(--bad); }
.probe-skipped, .probe-none { color: var(--muted); }
th.probe-col { font-size: 12px; }
.cell-fail .mark, .cell-fail .mark a { color: var(--bad); }
.cell-infra .mark, .cell-infra .mark a { color: var(--warn); }
.cell-waiting .mark { color: var(--muted); font-weight: normal; }
.cell-running .mark { color: var(--warn); }
.cell .check { font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cell .figures { display: block; }
ul.checks { margin: .3em 0; padding-left: 1.2em; list-style: none; }
@media (max-width: 40rem) {
  main { padding: .6em; }
  th.wide, td.wide { display: none; }
  dl.facts { grid-template-columns: 1fr; }
}
`;

/**
 * `/viewer/live.js`: a run page that is still going follows the run's SSE stream and, for each
 * new event, asks the server for the rendered steps after the last one it shows; the daemon's
 * and a running battery's pages fetch themselves again every few seconds; the runs list follows
 * the stream of run changes (/viewer/runs/events), and j/k move between its runs (Enter opens
 * one, as with any link); times of runs in progress count on between events.
 */
export const LIVE_JS = `'use strict';
(function () {
  var KINDS = ['run_start', 'llm_request', 'llm_response', 'llm_retry', 'tool_call_recovered',
    'text_fallback', 'tool_call', 'tool_result', 'tool_error', 'security_event', 'finish_rejected', 'finish_gate_passed',
    'steer_message', 'run_paused', 'run_unpaused', 'approval_requested', 'approval_decided', 'run_end'];
  var main = document.getElementById('main');
  if (main && main.getAttribute('data-live') === 'true') follow(main);
  var region = document.getElementById('refresh');
  if (region && region.getAttribute('data-refresh-ms')) poll(region);
  var list = document.getElementById('runs-list');
  if (list) liveList(list);
  listKeys();
  resumeActions();
  approvalActions();
  watchParked();
  steerActions();
  setInterval(countOn, 1000);

  // Times of runs in progress (data-elapsed-ms, as the server rendered them) keep counting on
  // the browser's clock, so they move between events too.
  var base = new WeakMap();
  function countOn() {
    var now = Date.now();
    document.querySelectorAll('[data-elapsed-ms]').forEach(function (el) {
      if (!base.has(el)) base.set(el, now - (Number(el.getAttribute('data-elapsed-ms')) || 0));
      el.textContent = duration(now - base.get(el)) + ' so far';
    });
  }
  function duration(ms) {
    if (!(ms >= 0)) return '\u2014';
    if (ms < 1000) return Math.round(ms) + ' ms';
    var s = ms / 1000;
    if (s < 60) return s.toFixed(1) + ' s';
    var m = Math.floor(s / 60);
    return m + ' min ' + Math.round(s - m * 60) + ' s';
  }

  // The runs list follows the server's stream of run changes: a row that is shown is replaced
  // (the focus stays on its link, so j/k and Enter go on from there); a run that is not shown
  // is added in its place when it matches the filters and this is the newest page.
  function liveList(list) {
    var rows = document.getElementById('runs-rows');
    var wantStatus = list.getAttribute('data-status');
    var wantSpecialist = list.getAttribute('data-specialist');
    var newest = list.getAttribute('data-newest') === 'true';
    var source = new EventSource('/viewer/runs/events');
    source.addEventListener('run', function (message) {
      var run;
      try { run = JSON.parse(message.data); } catch (e) { return; }
      var parsed = new DOMParser().parseFromString('<table><tbody>' + run.row + '</tbody></table>', 'text/html');
      var next = parsed.querySelector('tbody > tr');
      if (!next) return;
      next = document.adoptNode(next);
      var all = Array.prototype.slice.call(rows.rows);
      var current = all.filter(function (row) { return row.getAttribute('data-run-id') === run.run_id; })[0];
      if (current) {
        var focused = current.contains(document.activeElement);
        current.replaceWith(next);
        if (focused) next.querySelector('a.run-link').focus();
        return;
      }
      if (!newest) return;
      if (wantStatus && run.status !== wantStatus) return;
      if (wantSpecialist && run.specialist !== wantSpecialist) return;
      var older = all.filter(function (row) { return row.getAttribute('data-run-id') < run.run_id; })[0];
      // Older than every row here, with older pages after it: it belongs on one of those.
      if (!older && all.length > 0 && document.querySelector('.pager a[rel=next]')) return;
      rows.insertBefore(next, older || null);
      list.hidden = false;
      var none = document.getElementById('runs-none');
      if (none) none.hidden = true;
    });
  }

  // The daemon's and a running battery's pages: fetch the page again and swap its region in
  // place, keeping the focus on the same link; a region without data-refresh-ms is final.
  function poll(region) {
    var every = Number(region.getAttribute('data-refresh-ms')) || 0;
    function tick() {
      fetch(location.pathname + location.search, { credentials: 'same-origin' })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (text) {
          var next = new DOMParser().parseFromString(text, 'text/html').getElementById('refresh');
          if (!next) return;
          every = Number(next.getAttribute('data-refresh-ms')) || 0;
          if (next.innerHTML === region.innerHTML) return;
          var focused = document.activeElement;
          var href = focused && region.contains(focused) ? focused.getAttribute('href') : null;
          var opened = Array.prototype.map.call(region.querySelectorAll('details[open][data-key]'), function (d) {
            return d.getAttribute('data-key');
          });
          next = document.adoptNode(next);
          Array.prototype.forEach.call(next.querySelectorAll('details[data-key]'), function (d) {
            if (opened.indexOf(d.getAttribute('data-key')) >= 0) d.open = true;
          });
          region.replaceWith(next);
          region = next;
          if (href) {
            var same = Array.prototype.filter.call(region.querySelectorAll('a[href]'), function (a) {
              return a.getAttribute('href') === href;
            })[0];
            if (same) same.focus();
          }
        })
        .catch(function () { /* the next tick tries again */ })
        .then(function () { if (every > 0) setTimeout(tick, every); });
    }
    if (every > 0) setTimeout(tick, every);
  }

  function follow(main) {
    var id = main.getAttribute('data-run-id');
    var last = Number(main.getAttribute('data-last-seq')) || 0;
    var busy = false, again = false, ended = false;
    var source = new EventSource('/v1/runs/' + encodeURIComponent(id) + '/events');
    KINDS.forEach(function (kind) {
      source.addEventListener(kind, function (message) {
        var seq = Number(message.lastEventId);
        // A resumed run's backlog holds the run_end it parked (or stopped) with: only a newer
        // one than the page shows ends it.
        if (kind === 'run_end' && seq > last) { ended = true; source.close(); }
        if (seq > last || ended) refresh();
      });
    });
    function refresh() {
      if (busy) { again = true; return; }
      busy = true;
      fetch('/runs/' + encodeURIComponent(id) + '/after/' + last, { credentials: 'same-origin' })
        .then(function (response) { return response.ok ? response.text() : Promise.reject(response.status); })
        .then(function (text) {
          var doc = new DOMParser().parseFromString(text, 'text/html');
          var summary = doc.getElementById('run-summary');
          var current = document.getElementById('run-summary');
          if (summary && current) current.replaceWith(document.adoptNode(summary));
          // The approvals, swapped only when they changed (a message being typed stays).
          var approvals = doc.getElementById('approvals');
          var shown = document.getElementById('approvals');
          if (approvals && shown && approvals.innerHTML !== shown.innerHTML)
            shown.replaceWith(document.adoptNode(approvals));
          var timeline = document.getElementById('timeline');
          doc.querySelectorAll('#timeline > li').forEach(function (item) {
            timeline.appendChild(document.adoptNode(item));
          });
          var fragment = doc.getElementById('fragment');
          var next = fragment ? Number(fragment.getAttribute('data-last-seq')) : last;
          if (next > last) last = next;
          main.setAttribute('data-last-seq', String(last));
          if (fragment && fragment.getAttribute('data-live') !== 'true') {
            main.setAttribute('data-live', 'false');
            source.close();
            var steer = document.getElementById('steer');
            if (steer) steer.remove();
            // Parked again on its next approval: wait for that answer too.
            watchParked();
          }
        })
        .catch(function () { /* the next event tries again */ })
        .then(function () {
          busy = false;
          if (again) { again = false; refresh(); }
        });
    }
  }

  // The Resume button (SPEC §18): POST /v1/runs/<id>/resume as the viewer's action (its cookie
  // and X-Fabric-Viewer); on 202 the page is opened again, live; a refusal shows its reason.
  function resumeActions() {
    document.addEventListener('submit', function (event) {
      var form = event.target;
      if (!form || form.id !== 'resume-form') return;
      event.preventDefault();
      var id = form.getAttribute('data-run-id');
      var steps = document.getElementById('resume-steps');
      var message = document.getElementById('resume-message');
      var button = document.getElementById('resume-button');
      var body = steps && steps.value !== '' ? { max_steps: Number(steps.value) } : {};
      if (button) button.disabled = true;
      if (message) message.textContent = 'Resuming…';
      fetch('/v1/runs/' + encodeURIComponent(id) + '/resume', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'content-type': 'application/json', 'x-fabric-viewer': '1' },
        body: JSON.stringify(body),
      })
        .then(function (response) {
          if (response.status === 202) { location.reload(); return; }
          return response.json().then(function (answer) {
            var error = (answer && answer.error) || {};
            if (message) message.textContent = (error.code || 'HTTP ' + response.status) + ': ' + (error.message || '');
            if (button) button.disabled = false;
          });
        })
        .catch(function (error) {
          if (message) message.textContent = 'The server did not answer: ' + error;
          if (button) button.disabled = false;
        });
    });
  }

${ACTIONS_JS}
  function listKeys() {
    if (!document.getElementById('runs-list') && document.querySelectorAll('a.run-link').length === 0) return;
    document.addEventListener('keydown', function (event) {
      var links = Array.prototype.slice.call(document.querySelectorAll('a.run-link'));
      if (event.altKey || event.ctrlKey || event.metaKey) return;
      var target = event.target;
      if (target && /^(INPUT|SELECT|TEXTAREA|BUTTON)$/.test(target.tagName)) return;
      var step = event.key === 'j' || event.key === 'ArrowDown' ? 1 : event.key === 'k' || event.key === 'ArrowUp' ? -1 : 0;
      if (step === 0) return;
      var at = links.indexOf(document.activeElement);
      var next = at < 0 ? (step > 0 ? 0 : links.length - 1) : Math.min(links.length - 1, Math.max(0, at + step));
      links[next].focus();
      event.preventDefault();
    });
  }
})();
`;

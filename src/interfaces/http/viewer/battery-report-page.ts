/**
 * `fabric battery --report FILE.html` (SPEC §12.1): the battery's page as one self-contained file
 * — its style inline, no script, nothing fetched (a Content-Security-Policy forbids it) — with
 * the per-model tables, the matrix and every failure with its check and message, readable
 * anywhere the file is opened.
 */
import type { BatteryRecord } from '../../../application/battery/battery-read-model.ts';
import type { BatterySummary } from '../../../application/battery/battery-summary.ts';
import { STYLE_CSS } from './assets.ts';
import { batteryBody } from './battery-pages.ts';
import { type SafeHtml, html, trusted } from './html.ts';
import { clip } from './layout.ts';

/** The whole report page; `summary` is the record's (`batterySummaryOf`, or the session's). */
export function batteryReportHtml(record: BatteryRecord, summary: BatterySummary): string {
  const { plan } = record;
  const failures = summary.cells.filter((cell) => !cell.passed && !cell.infrastructure);
  const infrastructure = summary.cells.filter((cell) => cell.infrastructure);
  const where = (cell: { task: string; model: string; repeat: number }) =>
    `${cell.task} × ${cell.model}${plan.repeat > 1 ? ` #${cell.repeat}` : ''}`;
  const item = (cell: (typeof summary.cells)[number]): SafeHtml =>
    html`<li><span class="mono">${where(cell)}</span>: <span class="check">${cell.failed_check ?? 'failed'}</span>${cell.run_id === null ? '' : html` <span class="mono meta">${cell.run_id}</span>`}${cell.error === null ? '' : html`<pre>${clip(cell.error, 4000)}</pre>`}</li>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="referrer" content="no-referrer">
<title>Battery ${plan.name} · agent-fabric</title>
<style>${trusted(STYLE_CSS)}</style>
</head>
<body>
<main id="main">
<h1>Battery ${plan.name} <span class="mono meta">${plan.id}</span></h1>
${batteryBody(record, summary, { links: false })}
<h2 id="failures-heading">Failures</h2>
${failures.length === 0 ? html`<p>None.</p>` : html`<ul class="failures" aria-labelledby="failures-heading">${failures.map(item)}</ul>`}
${
  infrastructure.length === 0
    ? ''
    : html`<h2 id="infrastructure-heading">Infrastructure failures</h2>
<p>Not counted against the models; <code>fabric battery --resume ${plan.id}</code> runs these cells again.</p>
<ul class="failures" aria-labelledby="infrastructure-heading">${infrastructure.map(item)}</ul>`
}
</main>
</body>
</html>
`.toString();
}

/**
 * The viewer's models page (SPEC §20): the model cards `fabric models probe` measured — model,
 * server, its kind and version, quantisation, when probed, each probe's outcome, battery pass
 * rates, and whether the card is stale — and one card's detail.
 */
import {
  type ModelCard,
  PROBE_IDS,
  type ProbeResult,
  cardKey,
} from '../../../application/models/model-card.ts';
import { plural } from '../../../domain/words.ts';
import { type SafeHtml, html } from './html.ts';
import { type Nav, page } from './layout.ts';

/** A card and why it no longer describes the model its server lists now (null: it does). */
export interface CardEntry {
  readonly card: ModelCard;
  readonly stale: string | null;
}

/** The path segment of a card's page: its key (server and model) in characters a URL keeps as they are. */
export function cardSlug(card: Pick<ModelCard, 'model' | 'backend' | 'baseUrl'>): string {
  return cardKey(card).replace(/[^A-Za-z0-9._-]+/g, '_');
}

const OUTCOME_MARKS: Record<ProbeResult['outcome'], string> = {
  pass: '✓ pass',
  fail: '✗ fail',
  error: '✗ error',
  timeout: '⧗ timeout',
  skipped: '– skipped',
};

/** `/models`: every card, by model then server. */
export function modelsPage(entries: readonly CardEntry[], nav: Nav): SafeHtml {
  const sorted = [...entries].sort(
    (a, b) => a.card.model.localeCompare(b.card.model) || cardKey(a.card).localeCompare(cardKey(b.card)),
  );
  const body =
    sorted.length === 0
      ? html`<p class="notice">No model cards yet: <code>fabric models probe</code> measures the models your servers list.</p>`
      : html`<div class="table-wrap"><table class="model-cards">
<caption class="meta">${plural(sorted.length, 'card')}, one per model and server. A stale card was probed before the server's model file, quantisation or version changed: <code>fabric models probe MODEL</code> measures it again.</caption>
<thead><tr><th scope="col">Model</th><th scope="col" class="wide">Server</th><th scope="col">Version</th><th scope="col">Quantisation</th><th scope="col">Probed</th><th scope="col">Tools</th><th scope="col">Score</th>${PROBE_IDS.map((id) => html`<th scope="col" class="probe-col">${id}</th>`)}<th scope="col">Battery</th><th scope="col">Stale</th></tr></thead>
<tbody>${sorted.map(listRow)}</tbody>
</table></div>`;
  return page('Models', html`<h1>Models</h1>${body}`, { nav, current: '/models' });
}

function listRow({ card, stale }: CardEntry): SafeHtml {
  const outcome = (id: string) => card.probes.find((probe) => probe.id === id)?.outcome;
  return html`<tr data-model="${card.model}" data-stale="${stale === null ? 'no' : 'yes'}">
<td><a class="run-link" href="/models/${cardSlug(card)}">${card.model}</a></td>
<td class="wide mono">${card.backend} ${card.baseUrl}</td>
<td>${card.backend}${card.serverVersion === null ? '' : ` ${card.serverVersion}`}</td>
<td>${card.quantisation ?? '—'}</td>
<td class="num">${card.probedAt.slice(0, 10)}</td>
<td>${toolsText(card)}</td>
<td class="num">${card.score}</td>
${PROBE_IDS.map((id) => {
  const result = outcome(id);
  return html`<td class="probe probe-${result ?? 'none'}" data-probe="${id}">${result === undefined ? '—' : OUTCOME_MARKS[result]}</td>`;
})}
<td>${batteryText(card)}</td>
<td class="stale">${stale === null ? 'no' : html`<span class="status-failed" title="${stale}">stale</span>`}</td>
</tr>`;
}

/** `/models/<slug>`: one card, its probes with their details and figures, its battery marks. */
export function modelCardPage(entry: CardEntry, nav: Nav): SafeHtml {
  const { card, stale } = entry;
  const facts = html`<dl class="facts">
<dt>Server</dt><dd class="mono">${card.backend} ${card.baseUrl}</dd>
<dt>Server version</dt><dd>${card.serverVersion ?? 'not said'}</dd>
<dt>Quantisation</dt><dd>${card.quantisation ?? 'not said'}</dd>
<dt>Model file</dt><dd class="mono">${card.modelFile ?? 'not said'}</dd>
<dt>Probed</dt><dd>${card.probedAt}</dd>
<dt>Tool calls</dt><dd>${toolsText(card)}</dd>
<dt>Score</dt><dd>${card.score} (probes passed over probes run)</dd>
<dt>Tokens</dt><dd>${card.tokens.prompt} read, ${card.tokens.completion} generated</dd>
<dt>Stale</dt><dd class="stale">${stale === null ? 'no' : html`${stale}; <code>fabric models probe ${card.model}</code> measures it again`}</dd>
</dl>`;
  const probes = html`<h2>Probes</h2><div class="table-wrap"><table class="probes">
<thead><tr><th scope="col">Probe</th><th scope="col">Outcome</th><th scope="col" class="wide">Detail</th><th scope="col">Figures</th></tr></thead>
<tbody>${card.probes.map(
    (probe) => html`<tr data-probe="${probe.id}">
<td class="mono">${probe.id}</td>
<td class="probe probe-${probe.outcome}">${OUTCOME_MARKS[probe.outcome]}</td>
<td class="wide">${probe.detail}</td>
<td class="mono">${Object.entries(probe.figures)
      .map(([name, value]) => `${name} ${value}`)
      .join(', ')}</td>
</tr>`,
  )}</tbody></table></div>`;
  const marks = Object.entries(card.battery).sort(([a], [b]) => a.localeCompare(b));
  const battery =
    marks.length === 0
      ? html`<p class="meta">No battery has measured this model yet.</p>`
      : html`<ul class="battery-marks">${marks.map(
          ([specialist, mark]) =>
            html`<li>${specialist}: ${mark.passRate === null ? 'no counted runs' : `pass rate ${mark.passRate}`} over ${plural(mark.runs, 'run')} (${mark.at.slice(0, 10)})</li>`,
        )}</ul>`;
  return page(
    card.model,
    html`<p class="meta"><a href="/models">Models</a></p><h1 class="mono">${card.model}</h1>${facts}${probes}<h2>Battery pass rates</h2>${battery}`,
    { nav, current: '/models' },
  );
}

function toolsText(card: ModelCard): string {
  return card.tools === 'dialect' ? `dialect (${card.dialect ?? '?'})` : card.tools;
}

function batteryText(card: ModelCard): string {
  const marks = Object.entries(card.battery).sort(([a], [b]) => a.localeCompare(b));
  if (marks.length === 0) return '—';
  return marks
    .map(([specialist, mark]) => `${specialist} ${mark.passRate === null ? '—' : mark.passRate}`)
    .join(', ');
}

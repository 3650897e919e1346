import { type HtmlValue, type SafeHtml, html } from './html.ts';

/** Where the pages link to, besides runs: only the views whose API routes exist. */
export interface Nav {
  readonly daemon: boolean;
  readonly batteries: boolean;
}

/** The header's links, in order; a view whose routes are not in this server is left out. */
const VIEWS = [
  { href: '/', label: 'Runs', shown: (_nav: Nav) => true },
  { href: '/approvals', label: 'Approvals', shown: (_nav: Nav) => true },
  { href: '/batteries', label: 'Batteries', shown: (nav: Nav) => nav.batteries },
  { href: '/daemon', label: 'Daemon', shown: (nav: Nav) => nav.daemon },
  { href: '/models', label: 'Models', shown: (_nav: Nav) => true },
] as const;

/** A whole page: the skip link, the header's links, and `body` as the main content. */
export function page(
  title: string,
  body: HtmlValue,
  options: {
    readonly nav: Nav;
    readonly main?: Record<string, string>;
    /** The header link of the view this page belongs to (`aria-current`). */
    readonly current?: '/' | '/approvals' | '/batteries' | '/daemon' | '/models';
  },
): SafeHtml {
  const links = VIEWS.filter((view) => view.shown(options.nav)).map(
    (view, i) =>
      html`${i === 0 ? '' : ' · '}<a href="${view.href}"${view.href === options.current ? html` aria-current="page"` : ''}>${view.label}</a>`,
  );
  const attributes = Object.entries(options.main ?? {}).map(([name, value]) => html` ${name}="${value}"`);
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title} · agent-fabric</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/viewer/style.css">
<script src="/viewer/live.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<span class="brand">agent-fabric</span>
<nav aria-label="Views">${links}</nav>
</header>
<main id="main" tabindex="-1"${attributes}>
${body}
</main>
</body>
</html>
`;
}

/** The status of a run as a word with its class (the word says it; colour only helps). */
export function statusBadge(status: string): SafeHtml {
  return html`<span class="status status-${status.replace(/[^a-z_]/g, '')}">${status}</span>`;
}

/** A duration in ms as a person reads it. */
export function duration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - m * 60)} s`;
}

/**
 * The time a run in progress has taken so far. Rendered with `data-elapsed-ms`, the page's
 * script keeps it counting from there (the browser's clock, so a skewed one does not matter).
 */
export function elapsed(ms: number): string {
  return `${duration(ms)} so far`;
}

/** Text cut to `max` characters, saying how much was left out. */
export function clip(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}\n… ${text.length - max} more characters (in the runlog)`;
}

/**
 * The part of a page that the script fetches again every `everyMs` and swaps in place (the
 * daemon's status, a running battery's matrix); null: the page is final, no more asking.
 */
export function refreshRegion(everyMs: number | null, body: HtmlValue): SafeHtml {
  return html`<div id="refresh"${everyMs === null ? '' : html` data-refresh-ms="${String(everyMs)}"`}>
${body}
</div>`;
}

import { type SafeHtml, html } from './html.ts';
import { clip } from './layout.ts';

/** A string argument longer than this is shown as a block even on one line. */
const INLINE_CHARS = 80;

/**
 * A tool call's arguments as a person reads them: a string that spans lines (a
 * `write_file` content, an `edit_file` old/new text, a shell command) as a preformatted block
 * labelled with its name, so its line breaks are real; short scalars inline; the JSON the
 * model sent kept under a details element. Arguments that are not a JSON object are shown as sent.
 */
export function toolArguments(raw: string, maxChars: number): SafeHtml {
  const trimmed = raw.trim();
  if (trimmed === '' || trimmed === '{}') return html``;
  const parsed = parseObject(trimmed);
  if (parsed === undefined) return html`<pre class="args">${clip(raw, maxChars)}</pre>`;
  const inline: SafeHtml[] = [];
  const blocks: SafeHtml[] = [];
  for (const [name, value] of Object.entries(parsed)) {
    if (typeof value === 'string' && (value.includes('\n') || value.length > INLINE_CHARS)) {
      blocks.push(
        html`<div class="arg-block"><div class="arg-name mono">${name}</div><pre class="arg-text" data-arg="${name}">${clip(value, maxChars)}</pre></div>`,
      );
    } else if (value !== null && typeof value === 'object') {
      blocks.push(
        html`<div class="arg-block"><div class="arg-name mono">${name}</div><pre class="arg-text" data-arg="${name}">${clip(JSON.stringify(value, null, 2), maxChars)}</pre></div>`,
      );
    } else {
      inline.push(
        html`<div><dt class="mono">${name}</dt><dd class="mono" data-arg="${name}">${typeof value === 'string' ? value : JSON.stringify(value)}</dd></div>`,
      );
    }
  }
  return html`<div class="args">${inline.length > 0 ? html`<dl class="args-inline">${inline}</dl>` : ''}${blocks}<details class="args-raw"><summary>Arguments as sent (JSON)</summary><pre class="args">${clip(JSON.stringify(parsed, null, 2), maxChars)}</pre></details></div>`;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

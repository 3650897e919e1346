/**
 * HTML built by a tagged template that escapes every value it is given, so model output from a
 * runlog can never become markup (the postgres package's idea, for HTML). Only `SafeHtml` —
 * what `html` itself returned — is inserted as it is. Synchronous and allocation-light: a
 * 1,000-step run is one page of a few thousand fragments.
 */

/** Markup that is safe to insert: built by `html`, or a constant wrapped by `trusted`. */
export class SafeHtml {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
  toString(): string {
    return this.text;
  }
}

/** A value `html` accepts: text (escaped), markup, or a list of either; null and false print nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** Escapes text for an element's content or a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char] ?? char);
}

/** The tagged template: `html\`<p>${untrusted}</p>\``. */
export function html(strings: TemplateStringsArray, ...values: readonly HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += render(values[i]) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Markup the code itself wrote (never data): a constant stylesheet, a fixed symbol. */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (value === null || value === undefined || value === false || value === true) return '';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return escapeHtml(value);
  let out = '';
  for (const item of value) out += render(item);
  return out;
}
